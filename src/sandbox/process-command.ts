// The command line and environment of one process-sandbox launch: the spec's command with its
// placeholders filled, free loopback ports, a minimal environment (nothing of the service's
// own: no database URI, no encryption key), and, when isolated, bubblewrap around it all.
import fs from 'node:fs';
import { AppError } from '../errors.js';
import { freePorts } from '../processes.js';
import { wrapCommand, type Isolation } from './isolation.js';
import { insideView, locateCommand, mkdirOwned, ownTree, pythonPaths } from './sandbox-view.js';
import { fill } from './process-support.js';
import { corsEnv, type SandboxLaunch } from './runtime.js';
import { exposureEnv, vscodeEnabled, WORKERS, type SandboxPorts } from './sandbox-ports.js';

export interface PreparedCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  ports: SandboxPorts;
  /** The spec's command as written (for error messages). */
  name: string;
}

/** Fills the spec, makes the folders (given to the sandbox's uid) and checks the command runs here. */
export async function prepareCommand(
  launch: SandboxLaunch,
  extra: Record<string, string>,
  folders: { dir: string; stateDir: string; uid: number | null },
  isolation: Isolation,
): Promise<PreparedCommand> {
  const { dir, stateDir, uid } = folders;
  const withVscode = vscodeEnabled(launch.spec);
  const [port, ...more] = await freePorts(1 + WORKERS.length + (withVscode ? 1 : 0));
  const ports: SandboxPorts = { agentServer: port!, workers: more.slice(0, WORKERS.length), vscode: more[WORKERS.length] ?? null };
  const values: Record<string, string> = { port: String(port), sandbox_dir: dir, ...extra };
  const [command, ...args] = (launch.spec.command ?? []).map((part) => fill(part, values));
  if (!command) throw unrunnable(`Sandbox spec ${launch.spec.id} has no command for the process runtime`);
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  if (uid !== null) await ownTree(dir, uid);
  mkdirOwned(fill(launch.spec.working_dir, values), uid);

  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: dir,
    USER: 'sandbox',
    LOGNAME: 'sandbox',
    LANG: process.env.LANG ?? 'C.UTF-8',
    TMPDIR: dir,
    ...Object.fromEntries(Object.entries(launch.spec.initial_env).map(([k, v]) => [k, fill(v, values)])),
    OH_SESSION_API_KEYS_0: launch.sessionApiKey,
    OH_SECRET_KEY: launch.sessionApiKey,
    OH_WEBHOOKS_0_BASE_URL: launch.webhookBaseUrl,
    ...corsEnv(launch.corsOrigins),
    SANDBOX_PORT: String(port),
    ...exposureEnv(ports),
  };
  const view = {
    dir,
    stateDir,
    uid: uid ?? process.getuid?.() ?? 0,
    readOnlyPaths: [...(launch.spec.read_only_paths ?? []), ...(extra.agent_server_python ? pythonPaths(extra.agent_server_python) : [])],
  };
  const isolated = isolation.kind === 'bubblewrap';
  // Checked here: inside bubblewrap a missing command would only show as an early exit.
  if (!locateCommand(command, env.PATH!, isolated ? insideView(view) : null)) {
    throw unrunnable(
      isolated && locateCommand(command, env.PATH!, null)
        ? `Cannot run the sandbox command "${command}": it is outside what an isolated sandbox sees (add its folder to the spec's read_only_paths)`
        : `Cannot run the sandbox command "${command}": not found or not executable`,
    );
  }
  const run = isolated ? wrapCommand(isolation, view, command, args) : { command, args };
  return { ...run, env, ports, name: command };
}

/** The spec cannot run here (no command, or the command does not start). */
export const unrunnable = (message: string) => new AppError('BAD_REQUEST', message, { reason: 'sandbox_spec_unrunnable' });
