// A sandbox's limits, resolved from its spec (as written: quantities) and the deployment's defaults.
import { parseBytes, parseCores } from '../config/quantities.js';
import type { SandboxLimits, SandboxSpec } from './runtime.js';

/** A sandbox's limits: its spec's where it sets them, else the deployment's defaults. */
export function resolveLimits(spec: Pick<SandboxSpec, 'limits'>, defaults: SandboxLimits): SandboxLimits {
  const set = spec.limits ?? {};
  return {
    memoryBytes: (set.memory && parseBytes(set.memory)) || defaults.memoryBytes,
    cpus: (set.cpu && parseCores(set.cpu)) || defaults.cpus,
    pids: set.pids ?? defaults.pids,
    diskBytes: (set.disk && parseBytes(set.disk)) || defaults.diskBytes,
  };
}
