import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';

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

  it('reads the browser-session settings', () => {
    const config = loadConfig({ TRUSTED_ORIGINS: 'https://app.example.com, http://localhost:3001/', TRUST_PROXY: 'loopback, 10.0.0.0/8' });
    expect(config.session).toEqual({
      ttlSeconds: 43_200,
      idleSeconds: 7_200,
      cookieSecure: false,
      trustedOrigins: ['https://app.example.com', 'http://localhost:3001'],
    });
    expect(loadConfig({ SESSION_IDLE_SECONDS: 'off' }).session.idleSeconds).toBeNull();
    expect(loadConfig({ SESSION_IDLE_SECONDS: '900' }).session.idleSeconds).toBe(900);
    expect(() => loadConfig({ SESSION_IDLE_SECONDS: '10' })).toThrow(/SESSION_IDLE_SECONDS/);
    expect(config.http.trustProxy).toBe('loopback, 10.0.0.0/8');
    expect(loadConfig({ TRUST_PROXY: '2' }).http.trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'true' }).http.trustProxy).toBe(true);
    expect(loadConfig({}).http.trustProxy).toBe(false);
  });

  it.each(['https://app.example.com/path', 'app.example.com', 'ftp://x.example'])('refuses TRUSTED_ORIGINS entry %s', (origin) => {
    expect(() => loadConfig({ TRUSTED_ORIGINS: origin })).toThrow(/TRUSTED_ORIGINS/);
  });

  it('refuses a session TTL outside 60 s … 30 days and a PUBLIC_URL that is not http(s)', () => {
    expect(() => loadConfig({ SESSION_TTL_SECONDS: '5' })).toThrow(/SESSION_TTL_SECONDS/);
    expect(() => loadConfig({ PUBLIC_URL: 'mailto:x@example.com' })).toThrow(/PUBLIC_URL/);
  });

  it('serves Agent Canvas by default, the d6 UI when WEB_UI_DIR is set, and refuses mixed-up UI settings', () => {
    expect(loadConfig({}).webUi).toMatchObject({ kind: 'canvas', dir: undefined, canvasDir: undefined, canvasVersion: '1.20.0' });
    expect(loadConfig({ WEB_UI_DIR: '/srv/ui' }).webUi).toMatchObject({ kind: 'd6', dir: '/srv/ui' });
    expect(loadConfig({ WEB_UI: 'none' }).webUi.kind).toBe('none');
    expect(loadConfig({ WEB_UI: 'canvas', AGENT_CANVAS_DIR: '/srv/canvas' }).webUi.canvasDir).toBe('/srv/canvas');
    expect(() => loadConfig({ WEB_UI: 'd6' })).toThrow(/WEB_UI_DIR: is required with WEB_UI=d6/);
    expect(() => loadConfig({ WEB_UI: 'canvas', WEB_UI_DIR: '/srv/ui' })).toThrow(/WEB_UI_DIR: serves the d6 web UI/);
    expect(() => loadConfig({ WEB_UI: 'react' })).toThrow(/WEB_UI/);
    expect(() => loadConfig({ AGENT_CANVAS_VERSION: '1.20.0; rm -rf /' })).toThrow(/AGENT_CANVAS_VERSION/);
  });
});
