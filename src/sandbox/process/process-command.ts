// The command line and environment of one process-sandbox launch: the spec's command with its
// placeholders filled, its ports, a minimal environment (nothing of the service's own: no
// database URI, no encryption key), and, when isolated, bubblewrap around it all with the plan
// of its network (sandbox-network.ts).
import fs from 'node:fs';
import path from 'node:path';
import { AppError } from '../../errors.js';
import { freePorts } from '../../processes.js';
import { wrapCommand, type Isolation } from '../isolation/isolation.js';
import { fill } from './process-support.js';
import { corsEnv, deferredInitEnv, secretsEnv, SINGLE_INSTANCE_ENV, type SandboxLaunch } from '../runtime.js';
import { CONTROL_PLANE_ORIGIN, INSIDE_PORTS, outboundPlan, type NetworkPlan } from '../isolation/sandbox-network.js';
import { exposureEnv, vscodeEnabled, WORKERS, type SandboxPorts } from '../sandbox-ports.js';
import { insideView, locateCommand, mkdirOwned, ownTree, pythonPaths } from '../isolation/sandbox-view.js';

export interface PreparedCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Where the service and the owner's browser reach the sandbox: host loopback ports. */
  ports: SandboxPorts;
  /** The same ports as the sandbox's processes listen on them (the reference container's when isolated). */
  insidePorts: SandboxPorts;
  /** The isolated sandbox's network; null without isolation (the host's, shared). */
  network: NetworkPlan | null;
  /** The spec's command as written (for error messages). */
  name: string;
}

export interface CommandContext {
  isolation: Isolation;
  /** The service's own port, which isolated sandboxes reach at CONTROL_PLANE_ORIGIN; null before it listens. */
  servicePort: number | null;
  /** SANDBOX_HOST_PORTS: host loopback ports an isolated sandbox may reach. */
  hostPorts: number[];
  /** An automation run's tools (uv's folder): on its PATH and in its view. */
  runTools: string[];
}

/** Fills the spec, makes the folders (given to the sandbox's uid) and checks the command runs here. */
export async function prepareCommand(
  launch: SandboxLaunch,
  extra: Record<string, string>,
  folders: { dir: string; stateDir: string; uid: number | null },
  context: CommandContext,
): Promise<PreparedCommand> {
  const { dir, stateDir, uid } = folders;
  const { isolation } = context;
  const isolated = isolation.kind === 'bubblewrap';
  const ownNetwork = isolated && isolation.network !== 'host';
  const withVscode = vscodeEnabled(launch.spec);
  const [port, ...more] = await freePorts(1 + WORKERS.length + (withVscode ? 1 : 0));
  const ports: SandboxPorts = { agentServer: port!, workers: more.slice(0, WORKERS.length), vscode: more[WORKERS.length] ?? null };
  // Each isolated sandbox has a network of its own, so inside it the ports can be the reference's.
  const insidePorts: SandboxPorts = ownNetwork ? { ...INSIDE_PORTS, vscode: withVscode ? INSIDE_PORTS.vscode : null } : ports;
  const values: Record<string, string> = { port: String(insidePorts.agentServer), sandbox_dir: dir, ...extra };
  const [command, ...args] = (launch.spec.command ?? []).map((part) => fill(part, values));
  if (!command) throw unrunnable(`Sandbox spec ${launch.spec.id} has no command for the process runtime`);
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  if (uid !== null) await ownTree(dir, uid);
  try {
    mkdirOwned(dir, fill(launch.spec.working_dir, values), uid);
  } catch (error) {
    throw unrunnable((error as Error).message);
  }

  const python = extra.agent_server_python ? pythonPaths(extra.agent_server_python) : [];
  // An automation run's setup finds uv, and a Python for its venv (the agent server's own), on its PATH.
  const runPath = launch.automationRun ? [...context.runTools, ...python.slice(1).map((dir) => path.join(dir, 'bin'))] : [];
  // uv trusts its own roots unless told: the system's store (the sandbox sees /etc) holds the operator's too.
  const runEnv: Record<string, string> = launch.automationRun ? { UV_SYSTEM_CERTS: '1' } : {};
  const base: Record<string, string> = {
    PATH: [...runPath, process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(':'),
    HOME: dir,
    USER: 'sandbox',
    LOGNAME: 'sandbox',
    LANG: process.env.LANG ?? 'C.UTF-8',
    TMPDIR: dir,
    ...runEnv,
    ...Object.fromEntries(Object.entries(launch.spec.initial_env).map(([k, v]) => [k, fill(v, values)])),
    OH_SESSION_API_KEYS_0: launch.sessionApiKey,
    OH_SECRET_KEY: launch.secretKey,
    OH_WEBHOOKS_0_BASE_URL: ownNetwork && context.servicePort ? callbackThroughNetwork(launch.webhookBaseUrl) : launch.webhookBaseUrl,
    ...corsEnv(launch.corsOrigins),
    ...deferredInitEnv(launch),
    ...SINGLE_INSTANCE_ENV,
    SANDBOX_PORT: String(insidePorts.agentServer),
    ...exposureEnv(insidePorts),
  };
  const env = { ...secretsEnv(launch.env, base), ...base };
  const view = {
    dir,
    stateDir,
    uid: uid ?? process.getuid?.() ?? 0,
    readOnlyPaths: [
      ...(launch.spec.read_only_paths ?? []),
      ...python,
      ...(launch.automationRun ? context.runTools.map((dir) => path.dirname(dir)) : []),
    ],
  };
  // Checked here: inside bubblewrap a missing command would only show as an early exit.
  if (!locateCommand(command, env.PATH!, isolated ? insideView(view) : null)) {
    throw unrunnable(
      isolated && locateCommand(command, env.PATH!, null)
        ? `Cannot run the sandbox command "${command}": it is outside what an isolated sandbox sees (add its folder to the spec's read_only_paths)`
        : `Cannot run the sandbox command "${command}": not found or not executable`,
    );
  }
  if (!isolated) return { command, args, env, ports, insidePorts, network: null, name: command };
  if (!ownNetwork) return { ...wrapCommand(isolation, view, command, args), env, ports, insidePorts, network: null, name: command };
  const network: NetworkPlan = {
    inbound: [
      { host: ports.agentServer, inside: insidePorts.agentServer },
      ...ports.workers.map((host, i) => ({ host, inside: insidePorts.workers[i]! })),
      ...(ports.vscode !== null && insidePorts.vscode !== null ? [{ host: ports.vscode, inside: insidePorts.vscode }] : []),
    ],
    outbound: outboundPlan(context.servicePort, context.hostPorts, launch.automationRun === true),
  };
  return { ...wrapCommand(isolation, view, command, args), env, ports, insidePorts, network, name: command };
}

/** The service's callback URL as an isolated sandbox reaches it: through its network's one path. */
function callbackThroughNetwork(url: string): string {
  const parsed = new URL(url);
  return `${CONTROL_PLANE_ORIGIN}${parsed.pathname}${parsed.search}`;
}

/** The spec cannot run here (no command, or the command does not start). */
export const unrunnable = (message: string) => new AppError('BAD_REQUEST', message, { reason: 'sandbox_spec_unrunnable' });
