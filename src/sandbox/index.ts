// The sandbox wing's one entry point: the rest of the service imports sandboxes from here only
// (the layout test holds it). Inside the wing, files import each other directly, never this file.
//
//   process/, isolation/, kubernetes/   the runtimes: how a sandbox runs (below everything else)
//   machine.ts                          the one place that chooses and builds a runtime
//   service/                            records, keys, slots, specs, secrets, events, URLs
//   lifecycle/                          idle pause, retention, warm pool, reconciler, resume
//   sandbox-access.ts                   a conversation's way to its running sandbox
export type { SandboxRuntime, SandboxSpec, SandboxState, SandboxStatus, ExposedUrl } from './runtime.js';
export { createSandboxRuntime, resolveSandboxMachine, type SandboxMachine } from './machine.js';
export { SandboxesService, type WarmSandboxes } from './service/sandboxes.service.js';
export { PauseHandoffRuntime } from './pause-handoff.js';
export { SandboxKeys } from './service/sandbox-keys.js';
export { envContext, keyContext, secretKeyContext } from './service/sandbox-records.js';
export { SandboxSecretsService } from './service/sandbox-secrets.service.js';
export { SandboxSpecsService } from './service/sandbox-specs.service.js';
export { agentProxyBase, browserOrigins, AGENT_PROXY_PREFIX } from './service/sandbox-urls.js';
export { SandboxLifecycle } from './lifecycle/index.js';
export type { SandboxUsage } from './lifecycle/usage.js';
export { SandboxAccess, withConversation, type ConversationLookup, type SandboxConnection } from './sandbox-access.js';
