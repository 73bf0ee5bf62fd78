// The OpenAPI document of the REST surface, generated from the routers' meta/input/output.
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { appRouter } from '../../routers/index.js';

let cached: OpenAPIObject | undefined;

export function openApiDocument(): OpenAPIObject {
  cached ??= generateOpenApiDocument(appRouter, {
    title: 'Agent control plane',
    description:
      'OpenHands-compatible REST API. Every operation requires the X-Session-API-Key header ' +
      '(browsers: the acp_session cookie from POST /api/auth/session, except on the webhooks); ' +
      'the same operations are available as typed tRPC procedures at /trpc.',
    version: '0.1.0',
    baseUrl: '/',
    securitySchemes: { SessionApiKey: { type: 'apiKey', in: 'header', name: 'X-Session-API-Key' } },
  });
  describeUploadBody(cached);
  return cached;
}

/** The upload route reads multipart parts (upload-route.ts), not the procedure's JSON input: document those. */
function describeUploadBody(document: OpenAPIObject): void {
  const operation = document.paths?.['/api/conversations/{conversation_id}/upload-files']?.post;
  if (!operation) return;
  const schema = {
    type: 'object' as const,
    properties: {
      files: {
        type: 'array' as const,
        items: { type: 'string' as const, format: 'binary' },
        description: 'One part per file; its file name names it',
      },
    },
    required: ['files'],
  };
  operation.requestBody = { required: true, content: { 'multipart/form-data': { schema } } };
}
