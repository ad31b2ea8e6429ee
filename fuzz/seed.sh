#!/bin/sh
# Seeds the fuzz corpora from the repository's manifests, snapshots and sim files and from a
# corpus of real DaemonSet manifests (CORPUS, default /work/shared/corpus when it exists).
# The structured targets (git_tree, planner) take bytes through `arbitrary`: libFuzzer starts
# them from nothing. Generated corpora stay out of git (see .gitignore).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
corpus=${CORPUS:-/work/shared/corpus}
mkdir -p "$here/corpus/manifest_load" "$here/corpus/snapshot_load" "$here/corpus/sim_file" \
    "$here/corpus/git_tree" "$here/corpus/planner"
copy() { # copy DEST FILE...
    dest=$1
    shift
    for f in "$@"; do
        [ -f "$f" ] && cp "$f" "$here/corpus/$dest/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
    done
    return 0
}
if [ -d "$corpus" ]; then
    copy manifest_load "$corpus"/*.yaml "$corpus"/*.yml "$corpus"/*.json
fi
copy manifest_load "$root"/fixtures/manifests/* "$root"/examples/manifests/* \
    "$root"/examples/sim/running/* "$root"/examples/deploy/*
copy snapshot_load "$root"/fixtures/snapshots/* "$root"/examples/manifests/*
copy sim_file "$root"/examples/sim/*.yaml
ls "$here/corpus" | while read -r t; do
    echo "$t: $(ls "$here/corpus/$t" | wc -l) seed(s)"
done
