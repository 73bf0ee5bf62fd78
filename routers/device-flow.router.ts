// The device authorization flow (docs/browser.md): a device asks for a code pair and polls
// for its token (open routes: the device holds no credential yet), and a signed-in user
// approves or denies the code on the verification page (/oauth/device, src/http/web/). The
// token route reads a form body and the verification route a form posted by the page, so both
// are served by src/http/rest/routes.ts; they still call these procedures.
import { authedProcedure, publicProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  DeviceAuthorizationSchema,
  DeviceAuthorizeInputSchema,
  DevicePendingInputSchema,
  DevicePendingSchema,
  DeviceTokenInputSchema,
  DeviceTokenSchema,
  DeviceVerifyInputSchema,
  DeviceVerifySchema,
} from '../contract/device-flow.schema.js';

/** Where the person approves: the page at /oauth/device of the address people open. */
export const VERIFICATION_PATH = '/oauth/device';

export const deviceFlowRouter = router({
  authorize: publicProcedure
    .meta({
      auth: 'none',
      openapi: {
        method: 'POST',
        path: '/oauth/device/authorize',
        tags: ['device-flow'],
        summary: 'Start a device login: a device code to poll with and a user code to approve in the browser',
        protect: false,
      },
    })
    .input(DeviceAuthorizeInputSchema)
    .output(DeviceAuthorizationSchema)
    .mutation(async ({ ctx, input }) => {
      const requested = await ctx.services.deviceFlow.authorize({
        clientName: input.client_name ?? input.client_id ?? null,
        userAgent: ctx.requester?.userAgent ?? null,
        address: ctx.requester?.address ?? null,
      });
      const config = ctx.deps.config;
      // The address people open: PUBLIC_URL, else the one this request reached.
      const base = config.publicUrl ?? ctx.requester?.origin ?? config.webUrl ?? '';
      const verificationUri = `${base}${VERIFICATION_PATH}`;
      return {
        device_code: requested.deviceCode,
        user_code: requested.userCode,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(requested.userCode)}`,
        expires_in: requested.expiresIn,
        interval: requested.interval,
      };
    }),

  token: publicProcedure
    .meta({
      auth: 'none',
      errors: [
        'device_authorization_pending',
        'device_slow_down',
        'device_code_expired',
        'device_access_denied',
        'device_code_invalid',
        'device_grant_type_unsupported',
      ],
      openapi: {
        method: 'POST',
        path: '/oauth/device/token',
        tags: ['device-flow'],
        summary: 'Poll for the API key (form-encoded device_code); RFC 8628 errors until the code is approved',
        protect: false,
      },
    })
    .input(DeviceTokenInputSchema)
    .output(DeviceTokenSchema)
    .mutation(async ({ ctx, input }) => {
      const { accessToken } = await ctx.services.deviceFlow.token(input.device_code, input.grant_type);
      return { access_token: accessToken, token_type: 'Bearer' as const };
    }),

  verify: authedProcedure
    .meta({
      errors: ['device_user_code_unknown'],
      openapi: {
        method: 'POST',
        path: '/oauth/device/verify-authenticated',
        tags: ['device-flow'],
        summary: "Approve (or deny) a device's user code as the signed-in user (form-encoded user_code)",
      },
    })
    .input(DeviceVerifyInputSchema)
    .output(DeviceVerifySchema)
    .mutation(async ({ ctx, input }) => {
      const status = await ctx.services.deviceFlow.decide(ctx.user.id, input.user_code, input.action === 'approve');
      const message = status === 'approved' ? 'Device approved: it receives an API key of yours' : 'Device request denied';
      return { success: true as const, status, message };
    }),

  /** What the verification page shows about a code (tRPC only: the page is HTML). */
  pending: authedProcedure
    .input(DevicePendingInputSchema)
    .output(DevicePendingSchema)
    .query(async ({ ctx, input }) => {
      const found = await ctx.services.deviceFlow.pending(input.user_code);
      return found
        ? {
            user_code: found.userCode,
            client_name: found.clientName,
            user_agent: found.userAgent,
            requested_from: found.requestedFrom,
            requested_at: found.requestedAt.toISOString(),
            expires_at: found.expiresAt.toISOString(),
          }
        : null;
    }),
});
