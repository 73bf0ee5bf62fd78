// Installs the OpenHands agent server for the process runtime (scripts/setup-agent-server.sh,
// cached outside the work tree, keyed by version) and answers the venv's python.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { PACKAGE_ROOT } from '../../processes.js';

export interface AgentServerSetupOptions {
  cacheDir: string;
  agentServerVersion: string;
  /** An interpreter >= 3.12 to use instead of probing PATH and pyenv. */
  agentServerPython?: string | undefined;
  log: Logger;
}

/** A sandbox's status_reason while the first start installs the agent server. */
export const AGENT_SERVER_INSTALLING = 'Installing the OpenHands agent server (first use; this takes a minute or two)';

/** One install per runtime, shared by the starts waiting for it; a failed one is tried again next time. */
export class AgentServerInstall {
  private installing: Promise<string> | undefined;

  constructor(private readonly options: AgentServerSetupOptions) {}

  /** The venv's python, installing it first if needed. */
  ensure(): Promise<string> {
    this.installing ??= installAgentServer(this.options).catch((error: unknown) => {
      this.installing = undefined; // let a later start try again (e.g. after installing Python)
      throw error;
    });
    return this.installing;
  }

  /** The install's result if it settles within waitMs (its failure is thrown), else null. */
  async within(install: Promise<string>, waitMs: number): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)));
    try {
      return await Promise.race([install, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

export function installAgentServer(options: AgentServerSetupOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(PACKAGE_ROOT, 'scripts', 'setup-agent-server.sh')], {
      env: {
        ...process.env,
        AGENT_CP_CACHE_DIR: options.cacheDir,
        AGENT_SERVER_VERSION: options.agentServerVersion,
        ...(options.agentServerPython ? { AGENT_SERVER_PYTHON: options.agentServerPython } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const started = Date.now();
    let announced = false;
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    // pip's hundreds of lines stay out of the log: one line when an install starts, one when it ends.
    child.stderr.on('data', (c: Buffer) => {
      if (!announced && /creating venv|pip install/.test(c.toString())) {
        announced = true;
        options.log.info(
          { version: options.agentServerVersion },
          'installing the OpenHands agent server into the cache (first use; 1-2 minutes)',
        );
      }
      stderr = (stderr + c.toString()).slice(-16_000);
    });
    child.on('exit', (code) => {
      const python = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && python) {
        if (/installed in/.test(stderr))
          options.log.info({ seconds: Math.round((Date.now() - started) / 1000), python }, 'installed the OpenHands agent server');
        return resolve(python);
      }
      const message = stderr.includes('no usable Python >= 3.12')
        ? 'The local sandbox runtime needs Python >= 3.12 to run the OpenHands agent server, and none was found ' +
          '(looked for python3.13/python3.12 on PATH and ~/.pyenv/versions/3.12+). Install one or set AGENT_SERVER_PYTHON.'
        : `Installing the OpenHands agent server failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`;
      reject(new AppError('SERVICE_UNAVAILABLE', message, { reason: 'sandbox_runtime_unavailable' }));
    });
  });
}

/** One install per agent-server version (a spec may name its own: agent_server_version). */
export class AgentServerInstalls {
  private readonly installs = new Map<string, AgentServerInstall>();

  constructor(private readonly options: AgentServerSetupOptions) {}

  for(version: string): AgentServerInstall {
    let install = this.installs.get(version);
    if (!install) this.installs.set(version, (install = new AgentServerInstall({ ...this.options, agentServerVersion: version })));
    return install;
  }
}
