// The only place that chooses a runtime implementation. The Kubernetes runtime is imported
// only when chosen: its client library alone adds ~70 MB to the process.
import path from 'node:path';
import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import { trialIsolation } from './isolation/isolated-launch.js';
import { announceIsolation, resolveIsolation, type Isolation } from './isolation/isolation.js';
import { detectLimitEnforcer, type LimitEnforcer } from './isolation/limits.js';
import { ProcessSandboxRuntime } from './process/process-runtime.js';
import type { SandboxRuntime } from './runtime.js';

/** What this machine gives process sandboxes: their isolation and how their limits hold. */
export interface SandboxMachine {
  isolation: Isolation;
  enforcer: LimitEnforcer;
}

/** Found once per start (a trial sandbox included); a test harness may find it once for many services. */
export async function resolveSandboxMachine(config: Config, log: Logger): Promise<SandboxMachine> {
  const isolation = await resolveIsolation({
    mode: config.sandbox.isolation,
    cacheDir: config.cacheDir,
    bwrapPath: config.sandbox.bwrapPath,
    pastaPath: config.sandbox.pastaPath,
    trial: trialIsolation,
  });
  announceIsolation(isolation, log);
  return { isolation, enforcer: await detectLimitEnforcer(log) };
}

/** servicePort: the port the service listens on, once it does (isolated sandboxes call back through it). */
export async function createSandboxRuntime(
  config: Config,
  log: Logger,
  servicePort: () => number | null = () => null,
  machine?: SandboxMachine,
): Promise<SandboxRuntime> {
  switch (config.sandbox.runtime) {
    case 'process': {
      const runtimeLog = log.child({ component: 'process-runtime' });
      const { isolation, enforcer } = machine ?? (await resolveSandboxMachine(config, runtimeLog));
      return new ProcessSandboxRuntime({
        rootDir: path.join(config.dataDir, 'sandboxes'),
        cacheDir: config.cacheDir,
        startupTimeoutMs: config.sandbox.startupTimeoutMs,
        agentServerVersion: config.sandbox.agentServerVersion,
        agentServerPython: config.sandbox.agentServerPython,
        isolation,
        limits: { enforcer, defaults: config.sandbox.limits },
        servicePort,
        hostPorts: config.sandbox.hostPorts,
        log: runtimeLog,
      });
    }
    case 'kubernetes': {
      const [{ KubeConfig }, { KubernetesSandboxRuntime }] = await Promise.all([
        import('@kubernetes/client-node'),
        import('./kubernetes/kubernetes-runtime.js'),
      ]);
      const k8s = config.sandbox.kubernetes;
      const kubeConfig = new KubeConfig();
      if (k8s.kubeconfig) kubeConfig.loadFromFile(k8s.kubeconfig);
      else if (k8s.inCluster) kubeConfig.loadFromCluster();
      else kubeConfig.loadFromDefault();
      return new KubernetesSandboxRuntime(kubeConfig, k8s, config.sandbox.startupTimeoutMs, log.child({ component: 'kubernetes-runtime' }));
    }
  }
}
