// Browser sign-in (the acp_session cookie). The session id travels only in Set-Cookie, never
// in a body; the transports write the cookie through ctx.browser.
import { authedProcedure, signInProcedure } from '../src/trpc/procedures.js';
import { z } from 'zod';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema, NoInputSchema, SuccessSchema } from '../contract/common.schema.js';
import { SessionInfoSchema, SignedOutEverywhereSchema, SignInInputSchema } from '../contract/auth.schema.js';

export const authRouter = router({
  signIn: signInProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/auth/session',
        tags: ['auth'],
        summary: 'Sign a browser in with an API key (sets the acp_session cookie)',
      },
    })
    .input(SignInInputSchema.prefault({}))
    .output(SessionInfoSchema)
    .mutation(async ({ ctx, input }) => {
      // A session cookie sent along is ended: signing in always rotates the session id.
      const opened = await ctx.services.sessions.open(input.api_key ?? ctx.sessionKey, ctx.browser?.sessionId);
      ctx.browser?.setSessionCookie(opened.sessionId, ctx.services.sessions.ttl);
      return { user_id: opened.userId, expires_at: opened.expiresAt.toISOString() };
    }),

  session: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/auth/session', tags: ['auth'], summary: 'The current session (or key) and its user' } })
    .input(NoInputSchema)
    .output(SessionInfoSchema)
    .query(({ ctx }) => ({ user_id: ctx.user.id, expires_at: ctx.session?.expiresAt.toISOString() ?? null })),

  // Agent Canvas in cookie mode on a real hostname asks this first: 401 sends it to /login?returnTo=.
  authenticate: authedProcedure
    .meta({
      openapi: { method: 'POST', path: '/api/authenticate', tags: ['auth'], summary: 'Whether the request is signed in: 200, else 401' },
    })
    .input(NoInputSchema)
    .output(MessageResponseSchema)
    .mutation(() => ({ message: 'User authenticated' })),

  // Agent Canvas reports its sign-in there (off loopback); this service keeps no analytics: answered, not stored.
  analyticsEvent: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/analytics/events',
        tags: ['auth'],
        summary: 'A client analytics event: answered, never stored',
      },
    })
    .input(z.object({ event_type: z.string().min(1).max(200), client_version: z.string().max(100).nullish() }))
    .output(MessageResponseSchema)
    .mutation(() => ({ message: 'Not recorded: this service keeps no analytics' })),

  signOut: authedProcedure
    .meta({
      openapi: { method: 'DELETE', path: '/api/auth/session', tags: ['auth'], summary: 'Sign out: ends the session, clears the cookie' },
    })
    .input(NoInputSchema)
    .output(SuccessSchema)
    .mutation(async ({ ctx }) => {
      if (ctx.session) await ctx.services.sessions.close(ctx.session.id);
      ctx.browser?.clearSessionCookie();
      return { success: true };
    }),

  signOutEverywhere: authedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/auth/sessions/end-all',
        tags: ['auth'],
        summary: 'Sign out everywhere: ends every browser session of the user, this one included (ours)',
      },
    })
    .input(NoInputSchema)
    .output(SignedOutEverywhereSchema)
    .mutation(async ({ ctx }) => {
      const ended = await ctx.services.sessions.closeAllOf(ctx.user.id);
      ctx.browser?.clearSessionCookie();
      return { success: true, ended_sessions: ended };
    }),
});
