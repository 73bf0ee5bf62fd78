// Base procedures. Every procedure converts domain errors (AppError) to tRPC errors in one
// place, logs and times itself; authedProcedure also narrows ctx.user to non-null. Each call
// over HTTP is charged to exactly one rate-limit bucket (src/rate-limit.ts): the user's, the
// sandbox's whose key it proved, or, when the edge left it to credentials that prove nothing
// here, the client address's (ctx.chargeAddress; requests without credentials paid at the edge).
import { TRPCError } from '@trpc/server';
import { unsafeInputIssue } from '../../contract/common.schema.js';
import { databaseUnavailable, isDatabaseUnavailable } from '../db/unavailable.js';
import { AppError, appErrorOf, InputIssuesError, toTRPCError } from '../errors.js';
import type { AccessClaims } from '../access-token.js';
import { AUTOMATION_KEY_PROCEDURES } from '../automations/automation-key-scope.js';
import { assertPermitted } from '../organizations/roles.js';
import type { OrgMembership } from '../organizations/index.js';
import type { Context, User } from './context.js';
import { middleware, publicProcedure as basePublic } from './init.js';

/** Every procedure: converts domain errors, and logs and times the call. */
const observed = middleware(async ({ ctx, path, type, next }) => {
  const started = performance.now();
  const result = await next();
  const durationMs = performance.now() - started;
  const done = (outcome: string) => {
    ctx.deps.metrics.procedureDuration.observe({ procedure: path, outcome }, durationMs / 1000);
    // Checked on the service's logger first: ctx.log is the request's own, made when first used.
    if (ctx.deps.log.isLevelEnabled('debug')) ctx.log.debug({ path, type, transport: ctx.transport, durationMs, outcome }, 'procedure');
  };
  if (!result.ok) {
    const error = clientError(result.error);
    if (error.code === 'INTERNAL_SERVER_ERROR') {
      ctx.log.error({ err: result.error.cause ?? result.error, path, transport: ctx.transport }, 'procedure failed');
    }
    done(error.code);
    throw error;
  }
  done('ok');
  // A subscription fails while it streams, after this middleware returned: map those errors too.
  if (type === 'subscription' && isAsyncIterable(result.data)) {
    return { ...result, data: mappedErrors(result.data, (error) => ctx.log.error({ err: error, path }, 'subscription failed')) };
  }
  return result;
});

/** What a client may see of a failure: domain errors by their code, anything unexpected as a bare 500. */
function clientError(error: TRPCError): TRPCError {
  const appError = appErrorOf(error) ?? (isDatabaseUnavailable(error.cause) ? databaseUnavailable(error.cause) : undefined);
  if (appError) return toTRPCError(appError);
  if (error.code !== 'INTERNAL_SERVER_ERROR') return error;
  // Never show an unexpected failure's own message (it may name internals) to clients.
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'Internal Server Error', cause: error.cause ?? error });
}

async function* mappedErrors<T>(source: AsyncIterable<T>, logUnexpected: (error: unknown) => void): AsyncGenerator<T> {
  try {
    yield* source;
  } catch (cause) {
    const error = clientError(cause instanceof TRPCError ? cause : toTRPCError(cause));
    if (error.code === 'INTERNAL_SERVER_ERROR') logUnexpected(cause);
    throw error;
  }
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

/**
 * Anywhere in the input: strings or keys with NUL characters (MongoDB-wire servers such as
 * FerretDB refuse them) and reserved keys such as "__proto__" (validation would drop them
 * silently) are a validation error with the field's path, not a failure inside the database.
 */
function rejectUnsafeInput(input: unknown): void {
  const issue = unsafeInputIssue(input);
  if (issue) {
    throw new TRPCError({
      code: 'BAD_REQUEST',
      message: 'Input validation failed',
      cause: new InputIssuesError([{ code: 'custom', path: issue.path, message: issue.message }]),
    });
  }
}

const observedProcedure = basePublic.use(observed);

/** No credential is checked: a call the edge left to credentials is the address's to pay. */
export const publicProcedure = observedProcedure.use(({ ctx, next }) => {
  ctx.chargeAddress?.();
  return next();
});

/** A sandbox's key proven: its own bucket; not proven, the address's (an id merely named never opens a bucket). */
async function provenSandbox(
  ctx: Context,
  expect: { sandboxId?: string; running?: boolean } = {},
  { fromSandboxOnly = true } = {},
): Promise<{ sandboxId: string; userId: string }> {
  let proven: { sandboxId: string; userId: string };
  try {
    // Local sandboxes reach the service only from this machine (their network's relay): a
    // session key that leaked elsewhere opens nothing from anywhere else. (Listing secret
    // names is the SDK workspace's, on the user's own machine: no value, from anywhere.)
    if (fromSandboxOnly && ctx.requester && ctx.deps.runtime.callbackOrigin?.() && !isLoopback(ctx.requester.address)) {
      throw new AppError('UNAUTHORIZED', 'Sandbox session keys are accepted only from the sandboxes of this machine');
    }
    proven = await ctx.services.sandboxKeys.authenticateSandboxKey(ctx.sessionKey, expect);
  } catch (error) {
    ctx.chargeAddress?.();
    throw error;
  }
  if (ctx.transport !== 'internal') ctx.deps.limits.sandbox(proven.sandboxId);
  return proven;
}

const isLoopback = (address: string) => /^(127\.|::1$|::ffff:127\.)/.test(address);

const forbidden = () => new TRPCError({ code: 'FORBIDDEN', message: 'Forbidden' });

/**
 * A user key (or the browser session) is required (ctx.user narrowed to non-null). Each call
 * counts against the user's rate limit, whichever transport and whichever way the user
 * authenticated, so switching transports or batching calls does not get around it (the per-IP
 * limit is checked earlier, at each transport's edge). One middleware for all of it: each
 * tRPC middleware layer copies the call's context.
 */
export const authedProcedure = observedProcedure.use(async ({ ctx, type, path, getRawInput, next }) => {
  if (!ctx.user) {
    ctx.chargeAddress?.();
    throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Unauthorized' });
  }
  // Cross-site protection of the cookie (the header cannot be sent by another site's page):
  // no cookie request made by another site, no state change without one of our origins, and
  // no read announcing a foreign origin (CORS lets localhost pages read with credentials).
  // Refused on the address's account: another site's page must not spend its visitor's requests.
  const browser = ctx.authVia === 'cookie' ? ctx.browser : undefined;
  const stateChanging = type === 'mutation' || browser?.unsafeMethod;
  if (browser && (browser.crossSite || ((stateChanging || browser.originPresent) && !browser.originTrusted))) {
    ctx.chargeAddress?.();
    throw forbidden();
  }
  if (ctx.transport !== 'internal') ctx.deps.limits.user(ctx.user.id);
  if (ctx.user.automationKey && !AUTOMATION_KEY_PROCEDURES.has(path)) {
    throw new TRPCError({ code: 'FORBIDDEN', message: 'An automation key opens only what automation runs use' });
  }
  const input = await getRawInput();
  rejectUnsafeInput(input);
  // Only narrows ctx.user's type: it is already set, and a ctx given to next() would make tRPC
  // copy the whole context, property by property, on every call.
  const result = await next({ ctx: SAME_CONTEXT });
  if (type === 'mutation') audited(ctx, ctx.user.id, path, input, result);
  return result;
});

/**
 * A call within an organisation (src/organizations/org-access.ts): the one its input's org_id
 * names (the path), else X-Org-Id, else the user's current one. Its procedure's
 * `orgPermission` is checked against the caller's role here, the one place roles are compared.
 */
export const orgProcedure = authedProcedure.use(async ({ ctx, meta, getRawInput, next }) => {
  const raw = (await getRawInput()) as { org_id?: unknown } | undefined;
  const pathOrgId = typeof raw?.org_id === 'string' ? raw.org_id : undefined;
  const org = await ctx.services.orgAccess.effective(ctx.user.id, {
    pathOrgId,
    headerOrgId: ctx.orgHeader,
    boundOrgId: ctx.user.boundOrgId,
  });
  if (meta?.orgPermission) assertPermitted(org.role, meta.orgPermission);
  return next({ ctx: { org } });
});

/** What an orgProcedure itself may answer (its procedures' meta lists them beside their own). */
export const ORG_SCOPE_ERRORS = ['organization_not_found', 'org_header_mismatch', 'org_permission_denied'] as const;

/** The team organisation a call acts in, or null for the personal one (what records keep). */
export const teamOrgId = (org: OrgMembership): string | null => (org.personal ? null : org.orgId);

/** A state-changing call goes into the audit log (src/services/audit.service.ts): names and ids only. */
function audited(ctx: Context, userId: string, action: string, input: unknown, result: { ok: boolean; error?: TRPCError }): void {
  const outcome = result.ok ? 'ok' : (appErrorOf(result.error!)?.code ?? result.error!.code);
  ctx.services.audit.record({ userId, action, outcome, input, via: ctx.transport });
}

/** tRPC keeps the call's context as it is when next() gets no ctx (undefined): ctx.user is non-null from here on. */
const SAME_CONTEXT = undefined as unknown as { user: User };

/**
 * Signing in takes the key itself, not the cookie; a browser request from another site's page
 * is still refused, so no page can sign a visitor into someone else's account.
 */
export const signInProcedure = publicProcedure.use(async ({ ctx, path, getRawInput, next }) => {
  const browser = ctx.browser;
  if (browser && (browser.crossSite || (browser.originPresent && !browser.originTrusted))) throw forbidden();
  const result = await next();
  // A sign-in is the user's it signed in; a refused one is nobody's yet ("-"), its address's.
  const userId = result.ok ? ((result.data as { user_id?: string } | undefined)?.user_id ?? '-') : '-';
  audited(ctx, userId, path, await getRawInput(), result);
  return result;
});

/**
 * For agent-server webhooks: the X-Session-API-Key must be the session key of the sandbox
 * named in the path. Checked before input validation, so an unauthenticated caller learns
 * nothing about the expected body.
 */
export const sandboxProcedure = observedProcedure.use(async ({ ctx, getRawInput, next }) => {
  const raw = (await getRawInput()) as { sandbox_id?: unknown } | undefined;
  const sandboxId = typeof raw?.sandbox_id === 'string' ? raw.sandbox_id : '';
  const { userId: sandboxOwner } = await provenSandbox(ctx, { sandboxId });
  return next({ ctx: { ...ctx, sandboxOwner } });
});

/**
 * For the agent servers' key-only webhooks (/api/v1/webhooks/conversations, /events/{id}): the
 * sandbox is the one whose session key X-Session-API-Key carries, whoever owns it.
 */
export const sandboxKeyProcedure = observedProcedure.use(async ({ ctx, next }) => {
  const { sandboxId, userId } = await provenSandbox(ctx);
  return next({ ctx: { ...ctx, sandboxOwner: userId, sandboxId } });
});

/**
 * For the agents' git-token lookup: a signed access token (X-Access-Token), whose user's
 * bucket pays (the token cannot be varied into fresh buckets: it is signed).
 */
export const accessTokenProcedure = observedProcedure.use(async ({ ctx, next }) => {
  let accessClaims: AccessClaims;
  try {
    accessClaims = ctx.services.agentCallbacks.accessClaims(ctx.accessToken);
  } catch (error) {
    ctx.chargeAddress?.();
    throw error;
  }
  if (ctx.transport !== 'internal') ctx.deps.limits.user(accessClaims.sub);
  return next({ ctx: { ...ctx, accessClaims } });
});

/**
 * For the sandbox-scoped secrets: X-Session-API-Key must be the session key of the sandbox named
 * in the path, and that sandbox must be running (checked before the input, as the webhooks do).
 */
const sandboxScoped = (fromSandboxOnly: boolean) =>
  observedProcedure.use(async ({ ctx, getRawInput, next }) => {
    const raw = (await getRawInput()) as { sandbox_id?: unknown } | undefined;
    const sandboxId = typeof raw?.sandbox_id === 'string' ? raw.sandbox_id : '';
    const { userId: sandboxOwner } = await provenSandbox(ctx, { sandboxId, running: true }, { fromSandboxOnly });
    return next({ ctx: { ...ctx, sandboxOwner } });
  });
export const sandboxScopedProcedure = sandboxScoped(true);
/** The names of a sandbox's secrets (no value): the SDK workspace asks from the user's machine. */
export const sandboxNamesProcedure = sandboxScoped(false);
