// The only place that chooses a runtime implementation.
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../config.js';
import { KubernetesSandboxRuntime } from './kubernetes-runtime.js';
import type { Logger } from '../logger.js';
import { ProcessSandboxRuntime } from './process-runtime.js';
import type { SandboxRuntime } from './runtime.js';

export function createSandboxRuntime(config: Config, log: Logger): SandboxRuntime {
  switch (config.sandbox.runtime) {
    case 'process':
      return new ProcessSandboxRuntime({
        rootDir: path.join(config.dataDir, 'sandboxes'),
        cacheDir: config.cacheDir,
        startupTimeoutMs: config.sandbox.startupTimeoutMs,
        agentServerVersion: config.sandbox.agentServerVersion,
        agentServerPython: config.sandbox.agentServerPython,
        log: log.child({ component: 'process-runtime' }),
      });
    case 'kubernetes': {
      const k8s = config.sandbox.kubernetes;
      const kubeConfig = new KubeConfig();
      if (k8s.kubeconfig) kubeConfig.loadFromFile(k8s.kubeconfig);
      else if (k8s.inCluster) kubeConfig.loadFromCluster();
      else kubeConfig.loadFromDefault();
      return new KubernetesSandboxRuntime(kubeConfig, k8s, config.sandbox.startupTimeoutMs, log.child({ component: 'kubernetes-runtime' }));
    }
  }
}
