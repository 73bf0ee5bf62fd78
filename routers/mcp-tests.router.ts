// Testing an MCP server from the settings page (docs/api.md "MCP servers"): one as typed in the
// form, with its tools in the answer (Agent Canvas's Cloud call), or one stored, by name (only ok).
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  McpTestInputSchema,
  McpTestResultSchema,
  StoredMcpTestInputSchema,
  StoredMcpTestResultSchema,
} from '../contract/mcp-servers.schema.js';

const tags = ['settings (2026)'];

export const mcpTestsRouter = router({
  // Always 200 for the server's own failures ({ok: false, error, error_kind}), as the reference.
  test: authedProcedure
    .meta({
      errors: ['mcp_stdio_not_testable', 'rate_limited'],
      openapi: { method: 'POST', path: '/api/v1/mcp/test', tags, summary: 'Connect to an MCP server and list its tools (stdio refused)' },
    })
    .input(McpTestInputSchema)
    .output(McpTestResultSchema)
    .mutation(({ ctx, input }) => ctx.services.mcpTests.test(ctx.user.id, input)),

  testStored: authedProcedure
    .meta({
      errors: ['mcp_server_not_found', 'mcp_stdio_not_testable', 'mcp_test_unavailable', 'rate_limited'],
      openapi: {
        method: 'POST',
        path: '/api/v1/settings/mcp/{settings_key}/test',
        tags,
        summary: 'Whether a stored MCP server answers (only ok: nothing of its answer is returned)',
      },
    })
    .input(StoredMcpTestInputSchema)
    .output(StoredMcpTestResultSchema)
    .mutation(({ ctx, input }) => ctx.services.mcpTests.testStored(ctx.user.id, input.settings_key, input.timeout)),
});
