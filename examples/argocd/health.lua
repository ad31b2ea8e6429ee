-- Argo CD health check of daemonsync's ManagedDaemonSet (daemonsync.io/v1alpha1, `mds`).
--
-- Install it in argocd-cm under the key
--   resource.customizations.health.daemonsync.io_ManagedDaemonSet
-- (docs/gitops-tools.md). It reads the record's status as daemonsync writes it:
--
--   Progressing  daemonsync has not yet written the status of the record's newest spec
--                (metadata.generation ahead of status.observedGeneration), or the rollout
--                is under way (Reconciling=True)
--   Degraded     the rollout halted on failing pods (Halted=True) or cannot make progress
--                (Stalled=True: past the progress deadline, blocked, a source error)
--   Suspended    paused (Paused=True: `daemonsync pause`), frozen (Frozen=True), or waiting
--                for a person: a manual canary or wave pause (`daemonsync promote`), an
--                abort (Ready=False while neither Reconciling nor Stalled)
--   Healthy      the desired state is reached (Ready=True)
--
-- The message is the one of the condition that decided. Plain Lua 5.1, as Argo CD runs it.

local hs = {}

if obj.status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for daemonsync to write the record's status"
  return hs
end

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end
local observed = obj.status.observedGeneration
if generation ~= nil and observed ~= nil and generation ~= observed then
  hs.status = "Progressing"
  hs.message = "Waiting for daemonsync to observe generation " .. tostring(generation) ..
    " (the status is of generation " .. tostring(observed) .. ")"
  return hs
end

local conditions = {}
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type ~= nil then
      conditions[c.type] = c
    end
  end
end

local function holds(kind)
  local c = conditions[kind]
  if c ~= nil and c.status == "True" then
    return c
  end
  return nil
end

local function message(c, otherwise)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return otherwise
end

local failed = holds("Halted") or holds("Stalled")
if failed ~= nil then
  hs.status = "Degraded"
  hs.message = message(failed, "The rollout cannot make progress")
  return hs
end

local held = holds("Frozen") or holds("Paused")
if held ~= nil then
  hs.status = "Suspended"
  hs.message = message(held, "The rollout is paused")
  return hs
end

local ready = conditions["Ready"]
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = message(ready, "The rollout is complete")
  return hs
end

local reconciling = holds("Reconciling")
if reconciling ~= nil then
  hs.status = "Progressing"
  hs.message = message(reconciling, "The rollout is under way")
  return hs
end

if ready ~= nil then
  -- Not done, not moving, not stalled: it waits for a person.
  hs.status = "Suspended"
  hs.message = message(ready, "The rollout waits")
  return hs
end

-- A status written before the Ready condition existed: judge the counters.
local s = obj.status
local desired = s.desiredNumberScheduled or 0
local updated = s.updatedNumberScheduled or 0
local available = s.numberAvailable or 0
if updated == desired and available == desired and (s.numberMisscheduled or 0) == 0 then
  hs.status = "Healthy"
  hs.message = "Revision " .. tostring(s.currentRevision) .. " runs on all " ..
    tostring(desired) .. " nodes"
  return hs
end
hs.status = "Progressing"
hs.message = tostring(updated) .. " of " .. tostring(desired) .. " nodes updated, " ..
  tostring(available) .. " available"
return hs
