import { describe, expect, it } from 'vitest';
import { PROCEDURES } from '../../routers/index.js';
import { openApiDocument } from '../../src/rest/openapi-document.js';
import { CONTRACT_ROUTES } from '../contract-routes.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

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
    // trpc-to-openapi matches in declaration order, first match wins (STYLE.md §3.1 item 1).
    const declared = [...PROCEDURES.values()].flatMap((p) => (p.meta?.openapi ? [p.meta.openapi] : []));
    const toRegex = (path: string) => new RegExp('^' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$');
    declared.forEach((earlier, i) => {
      for (const later of declared.slice(i + 1)) {
        const shadows = earlier.method === later.method && earlier.path.includes('{') && toRegex(earlier.path).test(later.path);
        expect(shadows, `${earlier.method} ${earlier.path} shadows ${later.path}`).toBe(false);
      }
    });
  });

  it('documents the session key as the security scheme of every operation', () => {
    const doc = openApiDocument();
    expect(doc.components?.securitySchemes).toEqual({ SessionApiKey: { type: 'apiKey', in: 'header', name: 'X-Session-API-Key' } });
    for (const item of Object.values(doc.paths ?? {})) {
      for (const method of METHODS) {
        const op = (item as Record<string, { security?: unknown }>)[method];
        if (op) expect(op.security).toEqual([{ SessionApiKey: [] }]);
      }
    }
  });
});
