import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('applies the embedded defaults', () => {
    const config = loadConfig({});
    expect(config.http).toMatchObject({ port: 3000, host: '127.0.0.1', maxBodySize: '1mb' });
    expect(config.dataDir).toBe(path.resolve('.data'));
    expect(config.mongo.uri).toBeUndefined();
    expect(config.providers.githubApiUrl).toBe('https://api.github.com');
  });

  it('treats blank optional values as unset and splits lists', () => {
    const config = loadConfig({ MONGODB_URI: '  ', PERMITTED_CORS_ORIGINS: 'https://a.example, https://b.example' });
    expect(config.mongo.uri).toBeUndefined();
    expect(config.http.corsOrigins).toEqual(['https://a.example', 'https://b.example']);
  });

  it('lists every bad variable in one error', () => {
    expect(() => loadConfig({ PORT: 'eighty', MAX_BODY_SIZE: 'huge', LOG_LEVEL: 'loud' })).toThrow(
      /PORT[\s\S]*LOG_LEVEL[\s\S]*MAX_BODY_SIZE|PORT[\s\S]*MAX_BODY_SIZE[\s\S]*LOG_LEVEL/,
    );
  });
});
