import { describe, expect, it } from 'vitest';
import { PROCEDURES } from '../../routers/index.js';
import { FAILURES } from '../../src/http/rest/legacy-errors.js';
import { openApiDocument } from '../../src/http/rest/openapi-document.js';
import { CONTRACT_ROUTES } from '../contract-routes.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Operations that take no credential (the device flow's own steps: the device has none yet; public conversations, by link; the SDK version automation runs read first). */
const OPEN = new Set(
  [...PROCEDURES.values()].flatMap((p) =>
    p.meta?.openapi && p.meta.auth === 'none' ? [`${p.meta.openapi.method} ${p.meta.openapi.path}`] : [],
  ),
);

function documentedRoutes(): string[] {
  const routes: string[] = [];
  for (const [path, item] of Object.entries(openApiDocument().paths ?? {})) {
    for (const method of METHODS) if ((item as Record<string, unknown>)[method]) routes.push(`${method.toUpperCase()} ${path}`);
  }
  return routes.sort();
}

describe('OpenAPI route inventory', () => {
  it('lists exactly the contract REST operations', () => {
    expect(documentedRoutes()).toEqual(CONTRACT_ROUTES);
  });

  it('declares no {param} route before a static sibling it would shadow', () => {
    // trpc-to-openapi matches in declaration order, first match wins (its documented behaviour).
    const declared = [...PROCEDURES.values()].flatMap((p) => (p.meta?.openapi ? [p.meta.openapi] : []));
    const toRegex = (path: string) => new RegExp('^' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$');
    declared.forEach((earlier, i) => {
      for (const later of declared.slice(i + 1)) {
        const shadows = earlier.method === later.method && earlier.path.includes('{') && toRegex(earlier.path).test(later.path);
        expect(shadows, `${earlier.method} ${earlier.path} shadows ${later.path}`).toBe(false);
      }
    });
  });

  it("documents the key (X-Session-API-Key, or Bearer on a user's operations) on every operation but the device flow's open steps", () => {
    const doc = openApiDocument();
    expect(doc.components?.securitySchemes).toMatchObject({
      SessionApiKey: { type: 'apiKey', in: 'header', name: 'X-Session-API-Key' },
      BearerApiKey: { type: 'http', scheme: 'bearer' },
    });
    // Sandboxes and agents present the sandbox's key (or a signed token) in a header: no Bearer there.
    const sandboxRoutes = new Set(
      [...PROCEDURES.values()].flatMap((p) =>
        p.meta?.auth && p.meta.auth !== 'none' && p.meta.openapi ? [`${p.meta.openapi.method} ${p.meta.openapi.path}`] : [],
      ),
    );
    expect(sandboxRoutes.size).toBeGreaterThan(3);
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      for (const method of METHODS) {
        const op = (item as Record<string, { security?: unknown }>)[method];
        const route = `${method.toUpperCase()} ${path}`;
        if (!op) continue;
        const expected = OPEN.has(route)
          ? undefined
          : sandboxRoutes.has(route)
            ? [{ SessionApiKey: [] }]
            : [{ SessionApiKey: [] }, { BearerApiKey: [] }];
        expect(op.security, route).toEqual(expected);
      }
    }
  });
});

describe('OpenAPI responses describe the wire', () => {
  const doc = openApiDocument();
  const operations = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const op = (item as Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>)[method];
      return op ? [{ route: `${method.toUpperCase()} ${path}`, method, path, responses: op.responses }] : [];
    }),
  );
  const schemaOf = (route: string, status: string) => {
    const op = operations.find((o) => o.route === route)!;
    return JSON.stringify(op.responses[status]?.content?.['application/json']?.schema ?? null);
  };

  it('lists the transport failures on every operation and the body failures on body operations', () => {
    expect([...OPEN].sort()).toEqual([
      'GET /api/automation/sdk-version',
      'GET /api/shared-conversations',
      'GET /api/shared-conversations/{conversation_id}',
      'GET /api/shared-events/search',
      'POST /oauth/device/authorize',
      'POST /oauth/device/token',
    ]);
    for (const op of operations) {
      expect(Object.keys(op.responses), op.route).toEqual(
        expect.arrayContaining([...(OPEN.has(op.route) ? [] : ['401']), '422', '429', '503']),
      );
      expect(op.responses.default, op.route).toBeUndefined();
      expect(op.responses['500'], op.route).toBeUndefined();
      if (['post', 'put', 'patch'].includes(op.method))
        expect(Object.keys(op.responses), op.route).toEqual(expect.arrayContaining(['413', '415']));
    }
  });

  it('requires the body of every body operation, also where a tRPC caller may leave the input out', () => {
    const bodies = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
      (['post', 'put', 'patch'] as const).flatMap((method) => {
        const op = (item as Record<string, { requestBody?: { required?: boolean } }>)[method];
        return op?.requestBody ? [[`${method.toUpperCase()} ${path}`, op.requestBody.required] as const] : [];
      }),
    );
    expect(bodies.map(([route]) => route)).toEqual(expect.arrayContaining(['POST /api/settings', 'POST /api/v1/sandboxes']));
    expect(bodies.filter(([, required]) => required !== true)).toEqual([]); // a body method without a JSON body gets 415
  });

  it('documents the success status of the contract and the legacy body of each failure', () => {
    const post = operations.find((o) => o.route === 'POST /api/secrets')!;
    expect(Object.keys(post.responses)).toContain('201');
    expect(Object.keys(post.responses)).not.toContain('200');
    expect(schemaOf('POST /api/secrets', '400')).toContain('ErrorMessage');
    expect(schemaOf('GET /api/settings', '404')).toContain('ErrorError');
    expect(schemaOf('PATCH /api/conversations/{conversation_id}', '404')).toContain('V0Error');
    expect(schemaOf('POST /api/conversations', '401')).toContain('ErrorString');
    expect(schemaOf('POST /api/v1/sandboxes/{sandbox_id}/pause', '404')).toContain('ErrorDetail');
    expect(schemaOf('POST /api/v1/sandboxes/{sandbox_id}/resume', '404')).toContain('ErrorDetail');
    expect(schemaOf('POST /api/v1/sandboxes', '429')).toContain('ErrorDetail'); // the sandbox limit…
    expect(schemaOf('POST /api/v1/sandboxes', '429')).toContain('ErrorMessage'); // …and the rate limit
    expect(schemaOf('GET /api/secrets', '422')).toContain('HTTPValidationError');
    const secrets = operations.find((o) => o.route === 'GET /api/v1/webhooks/secrets')!;
    expect(Object.keys(secrets.responses['200']!.content!)).toEqual(['text/plain']);
    expect(Object.keys(doc.components?.schemas ?? {}).filter((name) => name.startsWith('error.'))).toEqual([]);
  });

  it('declares every domain failure of the table on some operation', () => {
    const declared = new Set([...PROCEDURES.values()].flatMap((p) => p.meta?.errors ?? []));
    // Every operation lists these (transport failures); two only tRPC can meet, one only background
    // starts; a stop during a resume (sandbox_paused) is answered as conversation_not_running
    // (src/sandbox/sandbox-access.ts) and never leaves the domain as itself; the OpenID Connect
    // sign-in's are answered by its browser pages (src/http/web/oidc-routes.ts), not an operation.
    const everywhere = [
      'rate_limited',
      'database_unavailable',
      'json_too_deep',
      'start_task_not_found',
      'sandbox_resume_failed',
      'sandbox_paused',
      'oidc_refused',
      'oidc_not_allowed',
      'oidc_provider_unreachable',
    ];
    expect(Object.keys(FAILURES).filter((reason) => !declared.has(reason as never) && !everywhere.includes(reason))).toEqual([]);
  });
});
