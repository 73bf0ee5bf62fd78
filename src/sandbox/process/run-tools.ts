// What an automation run's code needs in its sandbox beyond the system's toolchain: uv (the
// automation service's preset setup.sh makes a venv and installs the SDK with it). Installed
// into the cache by scripts/setup-uv.sh at the first run's start (seconds; then instant).
import path from 'node:path';
import type { Logger } from '../../logger.js';
import { runSetupScript } from '../../processes.js';

export class RunTools {
  private found: Promise<string[]> | null = null;

  constructor(
    private readonly cacheDir: string,
    private readonly log: Logger,
  ) {}

  /** The folders to put on an automation run's PATH (and in its view); none when uv cannot be had here (logged, tried again next time). */
  dirs(): Promise<string[]> {
    this.found ??= runSetupScript('setup-uv.sh', [], { ...process.env, AGENT_CP_CACHE_DIR: this.cacheDir }).then(
      ({ provided, failure }) => {
        if (provided) return [path.dirname(provided)];
        this.found = null;
        this.log.warn({ reason: failure }, 'no uv for automation runs: their setup will fail (scripts/setup-uv.sh)');
        return [];
      },
    );
    return this.found;
  }
}
