// The legacy REST operations this service promises (API.md), as "METHOD /path". The
// OpenAPI document generated from the routers must list exactly these.
export const CONTRACT_ROUTES = [
  'GET /api/settings',
  'POST /api/settings',
  'POST /api/reset-settings',
  'POST /api/add-git-providers',
  'POST /api/unset-provider-tokens',
  'GET /api/secrets',
  'POST /api/secrets',
  'PUT /api/secrets/{secret_id}',
  'DELETE /api/secrets/{secret_id}',
  'GET /api/v1/sandbox-specs/search',
  'GET /api/v1/sandbox-specs',
  'GET /api/v1/sandboxes/search',
  'GET /api/v1/sandboxes',
  'POST /api/v1/sandboxes',
  'POST /api/v1/sandboxes/{sandbox_id}/pause',
  'POST /api/v1/sandboxes/{sandbox_id}/resume',
  'DELETE /api/v1/sandboxes/{id}',
].sort();
