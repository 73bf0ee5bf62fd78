// The device authorization flow (RFC 8628; docs/browser.md): what the CLI, the CloudClient and
// Agent Canvas send and read to log in, and what the verification page sends.
import { z } from 'zod';

const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((value) => !value.includes('\u0000'), 'String should not contain NUL characters');

/** The clients send {}; a client may say who it is (RFC 8628 client_id, or a name). */
export const DeviceAuthorizeInputSchema = z
  .object({
    client_id: text(100).nullable().optional(),
    client_name: text(100).nullable().optional(),
    scope: text(200).nullable().optional(),
  })
  .prefault({});

/** All six are always sent: the CLI refuses an answer without any of them. */
export const DeviceAuthorizationSchema = z
  .object({
    device_code: z.string(),
    user_code: z.string(),
    verification_uri: z.string(),
    verification_uri_complete: z.string(),
    expires_in: z.number().int(),
    interval: z.number().int(),
  })
  .meta({ id: 'DeviceAuthorizationResponse' });

export const DeviceTokenInputSchema = z.object({ device_code: text(200).pipe(z.string().min(1)), grant_type: text(200).optional() });

/** The access token is an API key of the approving user; API keys do not expire, so there is no expires_in. */
export const DeviceTokenSchema = z
  .object({ access_token: z.string(), token_type: z.literal('Bearer') })
  .meta({ id: 'DeviceTokenResponse' });

export const DeviceVerifyInputSchema = z.object({
  user_code: text(50).pipe(z.string().min(1)),
  // The page's two buttons; approve when left out (the reference's route approves).
  action: z.enum(['approve', 'deny']).default('approve'),
});

export const DeviceVerifySchema = z
  .object({ success: z.literal(true), status: z.enum(['approved', 'denied']), message: z.string() })
  .meta({ id: 'DeviceVerifyResponse' });

export const DevicePendingInputSchema = z.object({ user_code: text(50) });

export const DevicePendingSchema = z
  .object({
    user_code: z.string(),
    client_name: z.string().nullable(),
    user_agent: z.string().nullable(),
    requested_from: z.string().nullable(),
    requested_at: z.string(),
    expires_at: z.string(),
  })
  .nullable();
