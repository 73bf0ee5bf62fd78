// The tRPC client of client components. It calls /trpc on this app's own origin (forwarded to
// the service by proxy.ts), so the browser's HttpOnly session cookie authenticates it and
// no key or session id is ever visible to JavaScript.
import { createClient } from '@agent-control-plane/client';

export const browserClient = createClient({ url: '/trpc' });
