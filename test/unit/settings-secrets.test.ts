// The one walk over settings credentials: every slot is visited with the AES-GCM context that
// stored data was sealed with (changing a context would make existing settings undecryptable).
import { describe, expect, it } from 'vitest';
import { mapSettingsSecrets, mcpSecretAt, SECRET_SETTINGS_FIELDS } from '../../src/services/settings/settings-secrets.js';

const doc = {
  llm_api_key: 'c-llm',
  search_api_key: null,
  mcp_config: {
    sse_servers: [{ url: 'https://sse.example', api_key: 'c-sse' }],
    shttp_servers: [{ url: 'https://shttp.example', api_key: null, timeout: 30 }],
    stdio_servers: [{ name: 'fs', command: 'npx', env: { TOKEN: 'c-env', EMPTY: 'c-empty' } }],
  },
};

describe('mapSettingsSecrets', () => {
  it('visits every secret slot, absent ones too, with the stored contexts', () => {
    const seen: string[] = [];
    mapSettingsSecrets('alice', doc, (value, at) => seen.push(`${at.kind} ${String(value)} ${at.context}`));
    expect(seen).toEqual([
      'field c-llm settings:alice:llm_api_key',
      'field null settings:alice:search_api_key',
      'field undefined settings:alice:sandbox_api_key',
      'api_key c-sse settings:alice:mcp_config',
      'api_key null settings:alice:mcp_config',
      'env c-env settings:alice:mcp_config',
      'env c-empty settings:alice:mcp_config',
    ]);
    expect(SECRET_SETTINGS_FIELDS).toEqual(['llm_api_key', 'search_api_key', 'sandbox_api_key']);
  });

  it('maps only the secrets and normalises the rest of the MCP config', () => {
    const mapped = mapSettingsSecrets('alice', doc, (value) => (value ? `<${value}>` : value));
    expect(mapped.fields).toEqual({ llm_api_key: '<c-llm>', search_api_key: null, sandbox_api_key: undefined });
    expect(mapped.mcp_config).toEqual({
      sse_servers: [{ url: 'https://sse.example', api_key: '<c-sse>' }],
      shttp_servers: [{ url: 'https://shttp.example', api_key: null, timeout: 30 }],
      stdio_servers: [{ name: 'fs', command: 'npx', args: [], env: { TOKEN: '<c-env>', EMPTY: '<c-empty>' } }],
    });
  });

  it('keeps an absent or null MCP config as it is', () => {
    expect(mapSettingsSecrets('alice', {}, () => 'x').mcp_config).toBeUndefined();
    expect(mapSettingsSecrets('alice', { mcp_config: null }, () => 'x').mcp_config).toBeNull();
  });

  it('finds the value stored at the same slot of another config', () => {
    const context = 'settings:alice:mcp_config';
    expect(mcpSecretAt(doc.mcp_config, { kind: 'api_key', servers: 'sse_servers', url: 'https://sse.example', context })).toBe('c-sse');
    expect(mcpSecretAt(doc.mcp_config, { kind: 'api_key', servers: 'shttp_servers', url: 'https://sse.example', context })).toBeUndefined();
    expect(mcpSecretAt(doc.mcp_config, { kind: 'env', server: 'fs', key: 'TOKEN', context })).toBe('c-env');
    expect(mcpSecretAt(null, { kind: 'env', server: 'fs', key: 'TOKEN', context })).toBeUndefined();
  });
});
