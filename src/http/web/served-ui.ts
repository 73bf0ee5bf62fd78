// Which web UI the service serves at / (WEB_UI), decided once at start:
//   - canvas: Agent Canvas's prebuilt build, from AGENT_CANVAS_DIR or fetched into the cache on
//     first start (scripts/setup-agent-canvas.sh, `npm pack` of the package: a couple of
//     seconds). A fetch that fails (no npm, registry unreachable) is said in one log line and
//     the service starts without a UI: the API does not depend on it.
//   - d6: the OpenHands web UI built into WEB_UI_DIR (docs/browser.md).
//   - none: the small home page.
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../logger.js';
import { runSetupScript } from '../../processes.js';

export type ServedUi = { kind: 'canvas' | 'd6'; root: string } | { kind: 'none' };

/** The folder holding index.html: the folder itself, or React Router's build/client inside it. */
export function resolveUiRoot(dir: string, variable = 'WEB_UI_DIR'): string {
  for (const candidate of [dir, path.join(dir, 'client')]) {
    if (fs.existsSync(path.join(candidate, 'index.html'))) return candidate;
  }
  throw new Error(
    `${variable} ${dir} holds no index.html (nor client/index.html): build the web UI first (docs/browser.md "Using the OpenHands web UI")`,
  );
}

/** The UI to serve; throws only for a configured folder without index.html (a mistake to stop at). */
export async function resolveServedUi(config: Config, log: Logger): Promise<ServedUi> {
  const ui = config.webUi;
  if (ui.kind === 'none') return { kind: 'none' };
  if (ui.kind === 'd6') return { kind: 'd6', root: resolveUiRoot(ui.dir!) };
  if (ui.canvasDir) return { kind: 'canvas', root: resolveUiRoot(ui.canvasDir, 'AGENT_CANVAS_DIR') };
  const root = await fetchAgentCanvas(config.cacheDir, ui.canvasVersion, log);
  return root ? { kind: 'canvas', root } : { kind: 'none' };
}

/**
 * Runs the setup script: instant when cached; otherwise one line saying what it fetches and one
 * with the outcome. Resolves to the build folder, or null when it cannot be had here.
 */
export async function fetchAgentCanvas(cacheDir: string, version: string, log: Logger): Promise<string | null> {
  const started = Date.now();
  let fetching = false;
  const { provided, failure } = await runSetupScript(
    'setup-agent-canvas.sh',
    [],
    { ...process.env, AGENT_CP_CACHE_DIR: cacheDir, AGENT_CANVAS_VERSION: version },
    {
      work: /fetching/,
      onWork: () => {
        fetching = true;
        log.info({ version }, 'fetching the web UI (npm @openhands/agent-canvas, the package tarball only) for the first start');
        log.flush();
      },
    },
  );
  if (provided && fs.existsSync(path.join(provided, 'index.html'))) {
    if (fetching) log.info({ seconds: Math.round((Date.now() - started) / 100) / 10, root: provided }, 'fetched the web UI (Agent Canvas)');
    return provided;
  }
  log.warn(
    { version, reason: failure ?? 'the fetched build has no index.html' },
    'Agent Canvas could not be fetched: starting without a web UI (the API is unaffected)',
  );
  return null;
}
