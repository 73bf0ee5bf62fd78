// Human-readable API docs: Swagger UI served from the swagger-ui-dist package (no CDN).
import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Response, type Router } from 'express';

// The package's folder only: its main module loads the whole 1.5 MB UI bundle into the process.
const ASSETS = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Agent control plane API</title>
  <link rel="stylesheet" href="/api/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/api/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#swagger-ui', persistAuthorization: true });
  </script>
</body>
</html>`;

export function docsRouter(): Router {
  const docs = express.Router();
  const nosniff = (res: Response) => res.setHeader('x-content-type-options', 'nosniff');
  docs.use('/api/docs/assets', express.static(ASSETS, { index: false, maxAge: '1h', setHeaders: nosniff }));
  docs.get(['/api/docs', '/docs'], (_req, res) => {
    // No page of ours frames the docs (as the sign-in and device pages); types are as sent.
    res.setHeader('content-security-policy', "frame-ancestors 'none'");
    res.setHeader('x-frame-options', 'DENY');
    nosniff(res);
    res.type('html').send(PAGE);
  });
  return docs;
}
