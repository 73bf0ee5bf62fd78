// createClient: the service's tRPC client with the links it needs. Queries and mutations go
// in batches over HTTP; the start-task subscription streams over server-sent events.
// Authentication is either an API key (server-side code only) or the browser's session cookie.
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, type TRPCClient } from '@trpc/client';
import { transformer } from './transformer.js';
import type { AppRouter } from './types.js';

export type AppClient = TRPCClient<AppRouter>;

type Headers = Record<string, string>;
type Fetch = (url: string, init?: RequestInit) => Promise<Response>;

/** An EventSource class: the browser's, or a ponyfill such as the `eventsource` package. */
export type EventSourceClass = new (
  url: string,
  init?: { withCredentials?: boolean; fetch?: Fetch },
) => {
  readonly CLOSED: number;
  readonly CONNECTING: number;
  readonly OPEN: number;
  readyState: number;
  addEventListener(type: string, listener: (event: never) => void): void;
  removeEventListener(type: string, listener: (event: never) => void): void;
  close(): void;
};

export interface ClientOptions {
  /** The tRPC endpoint: `http://localhost:3000/trpc`, or a same-origin path such as `/trpc` in a browser. */
  url: string;
  /** An API key, sent as X-Session-API-Key. For server-side code only: never give a key to a browser. */
  apiKey?: string;
  /** 'include' sends the browser's cookies (the session) with every call, also to another origin. */
  credentials?: 'include';
  /** Extra headers on every call, or a function returning them (called per request). */
  headers?: Headers | (() => Headers | Promise<Headers>);
  /** The fetch to use; the global one by default. */
  fetch?: Fetch;
  /**
   * The EventSource for subscriptions; the global one by default. Browsers' EventSource sends
   * cookies but no headers: `apiKey` and `headers` reach subscriptions only through a class
   * that takes a `fetch` option, such as the `eventsource` package (needed on Node anyway).
   */
  EventSource?: EventSourceClass;
}

export function createClient(options: ClientOptions): AppClient {
  const headers = async (): Promise<Headers> => ({
    ...(typeof options.headers === 'function' ? await options.headers() : options.headers),
    ...(options.apiKey ? { 'x-session-api-key': options.apiKey } : {}),
  });
  const baseFetch: Fetch = options.fetch ?? ((url, init) => fetch(url, init));
  const withCredentials = options.credentials === 'include';
  const linkFetch: Fetch = withCredentials ? (url, init) => baseFetch(url, { ...init, credentials: 'include' }) : baseFetch;
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({
          url: options.url,
          transformer,
          ...(options.EventSource ? { EventSource: options.EventSource } : {}),
          eventSourceOptions: async () => {
            const extra = await headers();
            return {
              withCredentials,
              fetch: (url: string, init?: RequestInit) => linkFetch(url, { ...init, headers: { ...(init?.headers as Headers), ...extra } }),
            };
          },
        }),
        false: httpBatchLink({ url: options.url, transformer, headers, fetch: linkFetch }),
      }),
    ],
  });
}
