// The built-in sandbox specs: the default agent server and the 2025 clients' one are offered; an
// earlier 2025 choice (1.1.0) is no longer offered but still found by id, so a sandbox made with
// it (paused before an upgrade) resumes instead of answering "spec no longer configured".
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { SandboxSpecsService } from '../../src/sandbox/service/sandbox-specs.service.js';

const RETIRED = 'local/openhands-agent-server:1.1.0';

describe('the built-in sandbox specs', () => {
  it('offers the default and the 1.0.0a6 spec, and still finds the retired 1.1.0 one', () => {
    const specs = new SandboxSpecsService(loadConfig({}).sandbox);
    const offered = specs.search(null, 10).items.map((spec) => spec.id);
    expect(offered).toEqual([specs.default.id, 'local/openhands-agent-server:1.0.0a6']);
    expect(specs.specIdFor('2025')).toBe('local/openhands-agent-server:1.0.0a6');
    expect(specs.find(RETIRED)).toMatchObject({ id: RETIRED, agent_server_version: '1.1.0' });
    expect(specs.batchGet([RETIRED, 'nope'])).toEqual([expect.objectContaining({ id: RETIRED }), null]);
  });

  it('SANDBOX_SPEC_2025 may name the retired spec, for the 2025 starts', () => {
    const specs = new SandboxSpecsService(loadConfig({ SANDBOX_SPEC_2025: RETIRED }).sandbox);
    expect(specs.specIdFor('2025')).toBe(RETIRED);
    expect(specs.search(null, 10).items.map((spec) => spec.id)).not.toContain(RETIRED);
  });

  it('has no retired specs on Kubernetes (its specs are images)', () => {
    const specs = new SandboxSpecsService(loadConfig({ SANDBOX_RUNTIME: 'kubernetes' }).sandbox);
    expect(specs.find(RETIRED)).toBeUndefined();
  });
});
