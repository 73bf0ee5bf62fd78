// Sandbox specs come from configuration: SANDBOX_SPECS_FILE (JSON or YAML) or a built-in
// default for the configured runtime. The first spec is the default.
import fs from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { pageOf, pageOffset } from '../../../contract/common.schema.js';
import type { ClientGeneration, SandboxSpecInfo } from '../../../contract/sandbox-specs.schema.js';
import type { Config } from '../../config/config.js';
import { parseBytes, parseCores } from '../../config/quantities.js';
import type { SandboxSpec } from '../runtime.js';

/** The spec file format: a list of specs, or {"specs": [...]}; the first is the default. */
const SandboxSpecsFileSchema = z.preprocess(
  (v) => (v && typeof v === 'object' && !Array.isArray(v) && 'specs' in v ? (v as { specs: unknown }).specs : v),
  z
    .array(
      z.strictObject({
        id: z.string().min(1),
        command: z.array(z.string()).nullable().default(null),
        initial_env: z.record(z.string(), z.string()).default({}),
        working_dir: z.string().default('/workspace/project'),
        read_only_paths: z.array(z.string().startsWith('/', 'an absolute path')).optional(),
        agent_server_version: z.string().min(1).optional(),
        deferred_init: z.boolean().optional(),
        limits: z
          .strictObject({
            memory: z
              .string()
              .refine((v) => parseBytes(v) !== null, 'a size such as 4Gi or 512Mi')
              .optional(),
            cpu: z
              .string()
              .refine((v) => parseCores(v) !== null, 'cores such as 2 or 500m')
              .optional(),
            pids: z.number().int().min(16).optional(),
            disk: z
              .string()
              .refine((v) => parseBytes(v) !== null, 'a size such as 10Gi')
              .optional(),
          })
          .optional(),
      }),
    )
    .min(1, 'at least one sandbox spec is required'),
);

/**
 * The agent server the 2025 clients (the d6 web UI, OpenHands 0.62) pin: they read its event shapes
 * (ExecuteBashObservation.output, which 1.0.0 moved into content; kinds 1.58 renamed) and routes
 * (GET /api/git/changes/{path}, which 1.58 moved). Installed with its own pinned dependencies
 * (scripts/agent-server-constraints/).
 */
export const AGENT_SERVER_VERSION_2025 = '1.0.0a6';
/** Earlier choices for the 2025 clients: their specs still resolve, so their sandboxes resume. */
const RETIRED_VERSIONS_2025 = ['1.1.0'];

/**
 * Each event is posted as soon as it is made (the agent server's default buffers 5, or waits up to
 * 30 s): the history clients load from /api/v1/conversation/{id}/events/search is then the agent's
 * log up to the event being posted. A lagging history widens the window in which a client that
 * then asks the agent server's socket for the events "since" gets a command's result before the
 * command (Agent Canvas then never pairs them: docs/agent-server-notes.md, Webhooks). Posts stay
 * serial; the delay paces the retries of a failed post. One webhook call per event, not per five.
 */
const EVENT_WEBHOOKS = { OH_WEBHOOKS_0_EVENT_BUFFER_SIZE: '1', OH_WEBHOOKS_0_FLUSH_DELAY: '2' };

/**
 * Built-in specs. Placeholders in command, env and working_dir are filled per sandbox by the
 * process runtime: {port} (free loopback port), {sandbox_dir} (the sandbox's own directory
 * under DATA_DIR) and {agent_server_python} (the cached agent-server venv, installed on
 * first use by scripts/setup-agent-server.sh). The process runtime has a second one, the
 * agent server of the 2025 clients.
 */
export function defaultSpecs(sandbox: Config['sandbox']): SandboxSpec[] {
  if (sandbox.runtime === 'kubernetes') {
    return [
      {
        id: sandbox.image,
        // The image's entrypoint is the agent server; the command only sets its port (reference Docker spec).
        command: ['--port', '8000'],
        initial_env: {
          OH_ENABLE_VNC: '0',
          LOG_JSON: 'true',
          OH_CONVERSATIONS_PATH: '/workspace/conversations',
          OH_BASH_EVENTS_DIR: '/workspace/bash_events',
          ...EVENT_WEBHOOKS,
        },
        working_dir: '/workspace/project',
      },
    ];
  }
  const specs = [processSpec(sandbox.agentServerVersion, {})];
  if (sandbox.agentServerVersion !== AGENT_SERVER_VERSION_2025)
    specs.push(processSpec(AGENT_SERVER_VERSION_2025, { agent_server_version: AGENT_SERVER_VERSION_2025 }));
  return specs;
}

/** Whether a release version (1.58.0) is at least major.minor; a pre-release (1.0.0a6) counts as its own. */
function versionAtLeast(version: string, [major, minor]: [number, number]): boolean {
  const [a = 0, b = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  return a > major || (a === major && b >= minor);
}

const processSpec = (version: string, extra: Partial<SandboxSpec>): SandboxSpec => ({
  id: `local/openhands-agent-server:${version}`,
  command: ['{agent_server_python}', '-m', 'openhands.agent_server', '--host', '127.0.0.1', '--port', '{port}'],
  initial_env: {
    OH_ENABLE_VSCODE: 'false',
    // Tools are imported per conversation (tool_module_qualnames), which keeps start-up short.
    OH_PRELOAD_TOOLS: 'false',
    DO_NOT_TRACK: '1',
    // Without it LiteLLM fetches its model-cost map from the internet at import.
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    OH_CONVERSATIONS_PATH: '{sandbox_dir}/conversations',
    OH_BASH_EVENTS_DIR: '{sandbox_dir}/bash_events',
    ...EVENT_WEBHOOKS,
    // Event timestamps are local time without a zone; make that UTC.
    TZ: 'UTC',
  },
  working_dir: '{sandbox_dir}/workspace/project',
  // Agent server 1.58 starts dormant on OH_DEFERRED_INIT and takes its keys at POST /api/init.
  deferred_init: versionAtLeast(version, [1, 58]),
  ...extra,
});

/**
 * Built-in specs no longer offered (not listed, never chosen) but still found by id, so a sandbox
 * made with one resumes: the process runtime's earlier agent servers for the 2025 clients.
 */
export function retiredSpecs(sandbox: Config['sandbox']): SandboxSpec[] {
  if (sandbox.runtime === 'kubernetes' || sandbox.specsFile) return [];
  return RETIRED_VERSIONS_2025.map((version) => processSpec(version, { agent_server_version: version }));
}

export class SandboxSpecsService {
  private readonly specs: SandboxSpec[];
  private readonly createdAt = new Date().toISOString();
  private readonly spec2025: SandboxSpec | undefined;
  private readonly retired: SandboxSpec[];

  constructor(sandbox: Config['sandbox']) {
    this.specs = sandbox.specsFile ? loadSpecsFile(sandbox.specsFile) : defaultSpecs(sandbox);
    this.retired = retiredSpecs(sandbox); // before the choice: SANDBOX_SPEC_2025 may name a retired spec
    this.spec2025 = this.chooseSpec2025(sandbox.spec2025);
  }

  /** The spec of a new sandbox for a conversation this client generation starts; null: the default. */
  specIdFor(generation: ClientGeneration): string | null {
    return generation === '2025' ? (this.spec2025?.id ?? null) : null;
  }

  /** SANDBOX_SPEC_2025 names a spec ("default": none); unset, the built-in 2025 spec if there is one. */
  private chooseSpec2025(configured: string | undefined): SandboxSpec | undefined {
    if (configured === 'default') return undefined;
    if (configured) {
      const spec = this.find(configured);
      if (!spec) throw new Error(`SANDBOX_SPEC_2025=${configured} names no sandbox spec (ids: ${this.specs.map((s) => s.id).join(', ')})`);
      return spec;
    }
    return this.specs.find((s) => s.agent_server_version === AGENT_SERVER_VERSION_2025 && s !== this.default);
  }

  get default(): SandboxSpec {
    return this.specs[0]!;
  }

  find(id: string): SandboxSpec | undefined {
    return this.specs.find((s) => s.id === id) ?? this.retired.find((s) => s.id === id);
  }

  search(pageId: string | null | undefined, limit: number) {
    const offset = pageOffset(pageId);
    return pageOf(
      this.specs.slice(offset, offset + limit).map((s) => this.info(s)),
      offset,
      limit,
      this.specs.length,
    );
  }

  batchGet(ids: string[]): (SandboxSpecInfo | null)[] {
    return ids.map((id) => {
      const spec = this.find(id);
      return spec ? this.info(spec) : null;
    });
  }

  private info(spec: SandboxSpec): SandboxSpecInfo {
    return { ...spec, created_at: this.createdAt };
  }
}

export function loadSpecsFile(file: string): SandboxSpec[] {
  const parsed = SandboxSpecsFileSchema.safeParse(parseYaml(fs.readFileSync(file, 'utf8')));
  if (!parsed.success) throw new Error(`Invalid SANDBOX_SPECS_FILE ${file}:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
