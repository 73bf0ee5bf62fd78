// A request's Context (src/trpc/context.ts), built the same way for every transport: the
// credentials (credentials.ts), the browser facts with the session-cookie writer (browser.ts),
// who sent it, the request's logger from the pipeline, and the per-IP charge the edge left to
// the credentials (pipeline.ts chargeLeftCall).
import type { IncomingMessage } from 'node:http';
import { createContextInner, type Context, type Deps, type Requester, type Transport } from '../trpc/context.js';
import { browserRequest, configuredOrigins, type HeaderWriter } from './browser.js';
import { authenticateRequest, credentialsOf } from './request-credentials.js';
import { chargeLeftCall, factsOf } from './pipeline.js';

export type RequestContext = (req: IncomingMessage, res?: HeaderWriter) => Promise<Context>;

/** `res` is given where a browser may be the client: it carries the cookie writer, and the cookie then authenticates too. */
export function createRequestContext(deps: Deps, transport: Transport): RequestContext {
  const trustedOrigins = configuredOrigins(deps.config);
  return async (req, res) => {
    const credentials = credentialsOf(req);
    const browser = res ? browserRequest(req, res, deps.config, trustedOrigins) : undefined;
    const orgHeader = req.headers['x-org-id'];
    const inner = createContextInner(deps, null, transport, {
      ...credentials,
      orgHeader: Array.isArray(orgHeader) ? orgHeader[0] : orgHeader,
    });
    const auth = await authenticateRequest(deps, browser ? credentials : { ...credentials, sessionId: undefined });
    const facts = factsOf(req);
    return {
      ...inner,
      ...auth,
      get log() {
        return facts.log; // the request's logger, made when first used (pipeline.ts)
      },
      browser,
      requester: requesterOf(req),
      chargeAddress: () => chargeLeftCall(deps, req),
    };
  };
}

/** A Host header that names a host (and port), nothing else; anything else gives no origin. */
const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

function requesterOf(req: IncomingMessage): Requester {
  const facts = factsOf(req);
  const host = req.headers.host;
  const userAgent = req.headers['user-agent'];
  return {
    origin: host && HOST.test(host) ? `${facts.protocol}://${host}` : null,
    userAgent: typeof userAgent === 'string' ? userAgent : null,
    address: facts.clientAddress,
  };
}
