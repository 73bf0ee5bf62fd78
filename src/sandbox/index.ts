// The only place that chooses a runtime implementation.
import path from 'node:path';
import type { Config } from '../config.js';
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
    case 'kubernetes':
      throw new Error('SANDBOX_RUNTIME=kubernetes is not available yet (issue 3 in progress)');
  }
}
