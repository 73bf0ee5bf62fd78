// Browser sessions: sign in with an API key, then the acp_session cookie authenticates.
import { z } from 'zod';

export const SignInInputSchema = z
  .object({
    // Optional on the wire: without it the X-Session-API-Key header is the key; with neither, 401.
    api_key: z.string().max(512).optional(),
  })
  .meta({ id: 'SignInInput' });
export type SignInInput = z.output<typeof SignInInputSchema>;

export const SessionInfoSchema = z
  .object({
    user_id: z.string(),
    // ISO-8601; null when the request is authenticated by the key header rather than a session.
    expires_at: z.string().nullable(),
  })
  .meta({ id: 'SessionInfo' });
export type SessionInfo = z.infer<typeof SessionInfoSchema>;

export const SignedOutEverywhereSchema = z
  .object({ success: z.literal(true), ended_sessions: z.number().int() })
  .meta({ id: 'SignedOutEverywhere' });
