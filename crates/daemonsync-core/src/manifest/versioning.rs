//! A DaemonSet's config set, versioned with its revision: the ConfigMaps and Secrets of its
//! namespace in the same source that its pod template references (volumes, projected
//! sources, `envFrom`, `env[].valueFrom`, init containers too), minus those
//! `daemonsync.io/ignore-config` names. The template is rewritten to reference immutable
//! copies named after their content ([`ConfigCopy`]) and carries the digest of every key in
//! [`CONFIG_ANNOTATION`], so its revision hash changes exactly when referenced config does.
//! A referenced object that is not in the source is left alone.

use super::config::{CONFIG_ANNOTATION, ConfigCopy, ConfigKind, ConfigObject};
use super::policy::IgnoredConfig;
use super::{FieldError, InvalidDaemonSet, Manifests};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use std::collections::{BTreeMap, HashMap};

/// One reference of a pod spec to a ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRef {
    /// ConfigMap or Secret.
    pub kind: ConfigKind,
    /// The name referenced.
    pub name: String,
    /// The keys it needs (a volume's `items`, an `env` key); none for a whole object.
    pub keys: Vec<String>,
    /// `optional: true`: a missing object (or key) is no error.
    pub optional: bool,
    /// For `env` and `envFrom`: the container (init or not, name); `None` for a volume.
    pub container: Option<(bool, String)>,
    /// For a volume: its name.
    pub volume: Option<String>,
    /// Where, below the pod spec (`volumes[0].configMap.name`).
    pub path: String,
}

/// Where a reference is: a volume (its name), or a container (init or not, its name).
enum Site {
    Volume(String),
    Container((bool, String)),
}

fn item_keys(items: &Option<Vec<k8s_openapi::api::core::v1::KeyToPath>>) -> Vec<String> {
    items.iter().flatten().map(|i| i.key.clone()).collect()
}

/// Every reference of `spec` to a ConfigMap or Secret, in spec order: volumes, then init
/// containers and containers (`envFrom`, then `env`).
pub fn references(spec: &PodSpec) -> Vec<ConfigRef> {
    let mut out = Vec::new();
    let mut push = |kind, name: &str, keys, optional: Option<bool>, at: Site, path: String| {
        let (container, volume) = match at {
            Site::Volume(v) => (None, Some(v)),
            Site::Container(c) => (Some(c), None),
        };
        out.push(ConfigRef {
            kind,
            name: name.to_string(),
            keys,
            optional: optional.unwrap_or(false),
            container,
            volume,
            path,
        })
    };
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        let vol = || Site::Volume(v.name.clone());
        if let Some(c) = &v.config_map {
            let path = format!("volumes[{i}].configMap.name");
            push(
                ConfigKind::ConfigMap,
                &c.name,
                item_keys(&c.items),
                c.optional,
                vol(),
                path,
            );
        }
        if let Some(s) = &v.secret {
            let path = format!("volumes[{i}].secret.secretName");
            let name = s.secret_name.as_deref().unwrap_or_default();
            push(
                ConfigKind::Secret,
                name,
                item_keys(&s.items),
                s.optional,
                vol(),
                path,
            );
        }
        let sources = v.projected.iter().flat_map(|p| p.sources.iter().flatten());
        for (j, source) in sources.enumerate() {
            let at = format!("volumes[{i}].projected.sources[{j}]");
            if let Some(c) = &source.config_map {
                let path = format!("{at}.configMap.name");
                push(
                    ConfigKind::ConfigMap,
                    &c.name,
                    item_keys(&c.items),
                    c.optional,
                    vol(),
                    path,
                );
            }
            if let Some(s) = &source.secret {
                let path = format!("{at}.secret.name");
                push(
                    ConfigKind::Secret,
                    &s.name,
                    item_keys(&s.items),
                    s.optional,
                    vol(),
                    path,
                );
            }
        }
    }
    let lists = [
        (
            "initContainers",
            true,
            spec.init_containers.as_deref().unwrap_or_default(),
        ),
        ("containers", false, spec.containers.as_slice()),
    ];
    for (list, init, containers) in lists {
        for (c, container) in containers.iter().enumerate() {
            let at = format!("{list}[{c}]");
            let who = || Site::Container((init, container.name.clone()));
            for (e, from) in container.env_from.iter().flatten().enumerate() {
                if let Some(r) = &from.config_map_ref {
                    let path = format!("{at}.envFrom[{e}].configMapRef.name");
                    push(
                        ConfigKind::ConfigMap,
                        &r.name,
                        Vec::new(),
                        r.optional,
                        who(),
                        path,
                    );
                }
                if let Some(r) = &from.secret_ref {
                    let path = format!("{at}.envFrom[{e}].secretRef.name");
                    push(
                        ConfigKind::Secret,
                        &r.name,
                        Vec::new(),
                        r.optional,
                        who(),
                        path,
                    );
                }
            }
            for (e, var) in container.env.iter().flatten().enumerate() {
                let Some(from) = &var.value_from else {
                    continue;
                };
                if let Some(r) = &from.config_map_key_ref {
                    let path = format!("{at}.env[{e}].valueFrom.configMapKeyRef.name");
                    let keys = vec![r.key.clone()];
                    push(
                        ConfigKind::ConfigMap,
                        &r.name,
                        keys,
                        r.optional,
                        who(),
                        path,
                    );
                }
                if let Some(r) = &from.secret_key_ref {
                    let path = format!("{at}.env[{e}].valueFrom.secretKeyRef.name");
                    let keys = vec![r.key.clone()];
                    push(ConfigKind::Secret, &r.name, keys, r.optional, who(), path);
                }
            }
        }
    }
    out
}

/// Points every reference of `spec` to the ConfigMap or Secret (`kind`) `from` at `to`.
pub fn rename(spec: &mut PodSpec, kind: ConfigKind, from: &str, to: &str) {
    let swap = |name: &mut String| {
        if name == from {
            *name = to.to_string();
        }
    };
    let is_cm = kind == ConfigKind::ConfigMap;
    for v in spec.volumes.iter_mut().flatten() {
        match (is_cm, &mut v.config_map, &mut v.secret) {
            (true, Some(c), _) => swap(&mut c.name),
            (false, _, Some(s)) => s.secret_name.iter_mut().for_each(swap),
            _ => {}
        }
        let sources = v
            .projected
            .iter_mut()
            .flat_map(|p| p.sources.iter_mut().flatten());
        for source in sources {
            match (is_cm, &mut source.config_map, &mut source.secret) {
                (true, Some(c), _) => swap(&mut c.name),
                (false, _, Some(s)) => swap(&mut s.name),
                _ => {}
            }
        }
    }
    let containers = spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(&mut spec.containers);
    for container in containers {
        rename_in_container(container, is_cm, &swap);
    }
}

fn rename_in_container(container: &mut Container, is_cm: bool, swap: &impl Fn(&mut String)) {
    for from in container.env_from.iter_mut().flatten() {
        match (is_cm, &mut from.config_map_ref, &mut from.secret_ref) {
            (true, Some(r), _) => swap(&mut r.name),
            (false, _, Some(r)) => swap(&mut r.name),
            _ => {}
        }
    }
    for var in container.env.iter_mut().flatten() {
        let Some(from) = &mut var.value_from else {
            continue;
        };
        match (
            is_cm,
            &mut from.config_map_key_ref,
            &mut from.secret_key_ref,
        ) {
            (true, Some(r), _) => swap(&mut r.name),
            (false, _, Some(r)) => swap(&mut r.name),
            _ => {}
        }
    }
}

/// What [`CONFIG_ANNOTATION`] holds: `configmap/NAME` or `secret/NAME` → key → digest.
pub type ConfigDigests = BTreeMap<String, BTreeMap<String, String>>;

/// Reads a [`CONFIG_ANNOTATION`] value (`None` when it does not read as one).
pub fn parse_digests(annotation: &str) -> Option<ConfigDigests> {
    serde_json::from_str(annotation).ok()
}

/// The [`CONFIG_ANNOTATION`] of a DaemonSet's template, if it has one.
pub fn template_digests(ds: &DaemonSet) -> Option<&str> {
    ds.spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(CONFIG_ANNOTATION)
        .map(String::as_str)
}

/// The ConfigMaps and Secrets of the source, by namespace, kind and name (more than one when
/// the source defines one twice).
type Index<'m> = HashMap<(&'m str, ConfigKind, &'m str), Vec<&'m ConfigObject>>;

/// Versions the config of every valid DaemonSet of `m` (see the module): rewrites its
/// template and gives it the copies it needs ([`super::Manifest::config`]). A DaemonSet that
/// references an invalid ConfigMap or Secret, or one defined twice, becomes invalid, with
/// the reference's path and what is wrong with the object.
pub fn version(m: &mut Manifests) {
    let mut index: Index<'_> = HashMap::new();
    for c in &m.configs {
        index
            .entry((&*c.namespace, c.kind, c.name.as_str()))
            .or_default()
            .push(c);
    }
    let mut valid = Vec::with_capacity(m.daemonsets.len());
    let mut invalid = Vec::new();
    for mut manifest in std::mem::take(&mut m.daemonsets) {
        match version_one(&mut manifest.daemonset, &index) {
            Ok(copies) => {
                manifest.config = copies;
                valid.push(manifest);
            }
            Err(errors) => invalid.push(InvalidDaemonSet {
                name: display_name(&manifest.daemonset),
                source: manifest.source,
                errors,
            }),
        }
    }
    m.daemonsets = valid;
    m.invalid.extend(invalid);
}

fn display_name(ds: &DaemonSet) -> String {
    format!(
        "{}/{}",
        ds.metadata.namespace.as_deref().unwrap_or_default(),
        ds.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Versions one DaemonSet's config; its copies, or why it cannot be.
fn version_one(ds: &mut DaemonSet, index: &Index<'_>) -> Result<Vec<ConfigCopy>, Vec<FieldError>> {
    let namespace = ds.metadata.namespace.clone().unwrap_or_default();
    let name = ds.metadata.name.clone().unwrap_or_default();
    let ignored = IgnoredConfig::of(ds);
    let Some(template) = ds.spec.as_mut().map(|s| &mut s.template) else {
        return Ok(Vec::new());
    };
    // The annotation is daemonsync's: one written in git is replaced (or dropped).
    if let Some(a) = template
        .metadata
        .as_mut()
        .and_then(|m| m.annotations.as_mut())
    {
        a.remove(CONFIG_ANNOTATION);
    }
    let Some(spec) = template.spec.as_mut() else {
        return Ok(Vec::new());
    };
    // Each object once, at the first place that references it.
    let mut referenced: BTreeMap<(ConfigKind, String), String> = BTreeMap::new();
    for r in references(spec) {
        if !r.name.is_empty() && !ignored.ignores(r.kind.as_str(), &r.name) {
            referenced.entry((r.kind, r.name)).or_insert(r.path);
        }
    }
    let mut copies = Vec::new();
    let mut digests = BTreeMap::new();
    let mut errors = Vec::new();
    for ((kind, object), path) in referenced {
        let Some(found) = index.get(&(namespace.as_str(), kind, object.as_str())) else {
            continue;
        };
        let path = format!("spec.template.spec.{path}");
        let value = format!("{object:?}");
        let fix = format!(
            "fix it, or leave it out of the revision with {}: {object}",
            super::policy::IGNORE_CONFIG
        );
        match found.as_slice() {
            [one] if one.is_service_account_token() => continue,
            [one] if !one.errors.is_empty() => {
                let why: Vec<String> = one.errors.iter().map(ToString::to_string).collect();
                errors.push(FieldError::invalid(
                    path,
                    value,
                    format!(
                        "{} {namespace}/{object} ({}) is invalid: {}; {fix}",
                        kind.kind(),
                        one.source,
                        why.join("; ")
                    ),
                ));
            }
            [one] => {
                let copy = ConfigCopy::of(one, &name);
                rename(spec, kind, &object, &copy.name);
                digests.insert(one.id(), one.content.key_digests(kind, &namespace, &object));
                copies.push(copy);
            }
            [first, second, ..] => errors.push(FieldError::invalid(
                path,
                value,
                format!(
                    "{} {namespace}/{object} is defined twice in the source: {} and {}; keep \
                     one definition",
                    kind.kind(),
                    first.source,
                    second.source
                ),
            )),
            [] => {}
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if !digests.is_empty() {
        let annotation = serde_json::to_string(&digests).unwrap_or_default();
        template
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(CONFIG_ANNOTATION.to_string(), annotation);
    }
    Ok(copies)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{LoadOptions, load_str};

    const DS: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: fluent-bit, namespace: logging}
spec:
  selector: {matchLabels: {app: fluent-bit}}
  template:
    metadata: {labels: {app: fluent-bit}}
    spec:
      initContainers:
      - name: init
        image: busybox
        env:
        - name: LEVEL
          valueFrom: {configMapKeyRef: {name: fluent-bit-config, key: level}}
      containers:
      - name: fluent-bit
        image: fluent/fluent-bit:3.0
        envFrom:
        - secretRef: {name: es-creds}
        - configMapRef: {name: elsewhere}
      volumes:
      - name: config
        configMap: {name: fluent-bit-config}
      - name: all
        projected:
          sources:
          - secret: {name: es-creds, items: [{key: password, path: p}]}
";

    fn config(level: &str, password: &str) -> String {
        format!(
            "---
apiVersion: v1
kind: ConfigMap
metadata: {{name: fluent-bit-config, namespace: logging}}
data: {{fluent-bit.conf: '[SERVICE]', level: {level}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: es-creds, namespace: logging}}
stringData: {{password: {password}}}
"
        )
    }

    fn load(text: &str) -> Manifests {
        let mut m = load_str("deploy.yaml", text, &LoadOptions::default()).expect("loads");
        version(&mut m);
        m
    }

    fn spec(m: &Manifests) -> &PodSpec {
        m.daemonsets[0]
            .daemonset
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("a pod spec")
    }

    #[test]
    fn every_reference_in_the_source_points_at_a_copy_and_others_stay() {
        let m = load(&format!("{DS}{}", config("info", "hunter2")));
        assert!(m.invalid.is_empty(), "{:?}", m.invalid);
        let copies = &m.daemonsets[0].config;
        assert_eq!(copies.len(), 2, "{copies:?}");
        let refs = references(spec(&m));
        let names: Vec<(ConfigKind, &str)> =
            refs.iter().map(|r| (r.kind, r.name.as_str())).collect();
        let cm = &copies
            .iter()
            .find(|c| c.kind == ConfigKind::ConfigMap)
            .unwrap()
            .name;
        let secret = &copies
            .iter()
            .find(|c| c.kind == ConfigKind::Secret)
            .unwrap()
            .name;
        assert!(
            cm.starts_with("fluent-bit-config-") && cm.len() == 28,
            "{cm}"
        );
        assert_eq!(
            names,
            [
                (ConfigKind::ConfigMap, cm.as_str()),
                (ConfigKind::Secret, secret.as_str()),
                (ConfigKind::ConfigMap, cm.as_str()),
                (ConfigKind::Secret, secret.as_str()),
                // Not in the source: left alone.
                (ConfigKind::ConfigMap, "elsewhere"),
            ]
        );
        let annotation = template_digests(&m.daemonsets[0].daemonset).expect("annotated");
        let digests = parse_digests(annotation).expect("JSON");
        assert_eq!(
            digests.keys().collect::<Vec<_>>(),
            ["configmap/fluent-bit-config", "secret/es-creds"]
        );
        assert_eq!(
            digests["configmap/fluent-bit-config"]
                .keys()
                .collect::<Vec<_>>(),
            ["fluent-bit.conf", "level"]
        );
        assert!(!annotation.contains("hunter2") && !annotation.contains("info"));
    }

    #[test]
    fn the_revision_changes_exactly_when_referenced_config_does() {
        // The revision hash is a function of the template (plan::revision).
        let revision = |text: String| {
            let m = load(&text);
            serde_json::to_string(&m.daemonsets[0].daemonset.spec.as_ref().unwrap().template)
                .unwrap()
        };
        let base = revision(format!("{DS}{}", config("info", "a")));
        assert_eq!(
            base,
            revision(format!("{DS}{}", config("info", "a"))),
            "deterministic"
        );
        assert_ne!(base, revision(format!("{DS}{}", config("debug", "a"))));
        assert_ne!(base, revision(format!("{DS}{}", config("info", "b"))));
        // Unreferenced config changes nothing, and neither does config that is not there.
        let other = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: unrelated, namespace: logging}\ndata: {a: b}\n";
        assert_eq!(
            base,
            revision(format!("{DS}{}{other}", config("info", "a")))
        );
        let plain = load(DS);
        assert!(plain.daemonsets[0].config.is_empty());
        assert!(template_digests(&plain.daemonsets[0].daemonset).is_none());
    }

    #[test]
    fn ignore_config_leaves_an_object_out_of_the_revision() {
        let ignoring = DS.replace(
            "namespace: logging}",
            "namespace: logging, annotations: {daemonsync.io/ignore-config: 'fluent-bit-config,secret/es-creds'}}",
        );
        let m = load(&format!("{ignoring}{}", config("info", "a")));
        assert!(m.daemonsets[0].config.is_empty());
        let names: Vec<String> = references(spec(&m)).into_iter().map(|r| r.name).collect();
        assert!(
            names
                .iter()
                .all(|n| n == "fluent-bit-config" || n == "es-creds" || n == "elsewhere")
        );
        let bad = DS.replace(
            "namespace: logging}",
            "namespace: logging, annotations: {daemonsync.io/ignore-config: 'Bad Name'}}",
        );
        let m = load(&bad);
        assert_eq!(m.invalid.len(), 1);
        assert!(
            m.invalid[0].errors[0]
                .to_string()
                .contains("daemonsync.io/ignore-config")
        );
    }

    #[test]
    fn an_invalid_or_twice_defined_config_makes_its_daemonset_invalid() {
        let bad = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fluent-bit-config, namespace: logging}\ndata: {'bad key': x}\n";
        let m = load(&format!("{DS}{bad}"));
        assert!(m.daemonsets.is_empty());
        let e = m.invalid[0].errors[0].to_string();
        assert!(
            e.starts_with(
                "spec.template.spec.volumes[0].configMap.name: Invalid value: \"fluent-bit-config\""
            ),
            "{e}"
        );
        assert!(
            e.contains("data[bad key]") && e.contains("deploy.yaml, document 2"),
            "{e}"
        );
        let twice = format!("{DS}{}{}", config("a", "b"), config("c", "d"));
        let m = load(&twice);
        let e = m.invalid[0]
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(e.contains("defined twice"), "{e}");
        assert!(!e.contains("hunter2"));
    }
}
