// Where a process sandbox's files live, and who may have sandboxes here. Each sandbox has its
// folder DATA_DIR/sandboxes/<id> (its own, writable by it) and the service's notes about it in
// DATA_DIR/sandboxes/.state/<id> (runtime.json, its log, its passwd file), out of its reach:
// a sandbox that could edit its runtime.json could make the service signal another sandbox.
import fs from 'node:fs';
import path from 'node:path';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { sandboxUid, type Isolation } from '../isolation/isolation.js';
import { loadRuntimeRecord } from './process-handles.js';
import { groupAlive, stopProcessGroup } from './process-support.js';

const SANDBOX_ID = /^[a-z0-9-]+$/;

export class SandboxFolders {
  constructor(
    private readonly rootDir: string,
    private readonly isolation: Isolation,
    private readonly log: Logger,
  ) {
    fs.mkdirSync(this.stateRoot, { recursive: true, mode: 0o700 });
    fs.chmodSync(rootDir, 0o700);
  }

  sandboxDir(sandboxId: string): string {
    if (!SANDBOX_ID.test(sandboxId)) throw new Error(`invalid sandbox id ${sandboxId}`);
    return path.join(this.rootDir, sandboxId);
  }

  /** The service's own files about a sandbox (never mounted into it). */
  stateDir(sandboxId: string): string {
    if (!SANDBOX_ID.test(sandboxId)) throw new Error(`invalid sandbox id ${sandboxId}`);
    return path.join(this.stateRoot, sandboxId);
  }

  /** The uid the sandbox runs as, when the service can give it one of its own. */
  uidOf(sandboxId: string): number | null {
    return this.isolation.kind === 'bubblewrap' && this.isolation.privileged ? sandboxUid(sandboxId) : null;
  }

  async list(): Promise<string[]> {
    const entries = await fs.promises.readdir(this.rootDir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && SANDBOX_ID.test(e.name)).map((e) => e.name);
  }

  remove(sandboxId: string): void {
    fs.rmSync(this.sandboxDir(sandboxId), { recursive: true, force: true });
    fs.rmSync(this.stateDir(sandboxId), { recursive: true, force: true });
  }

  /**
   * Without isolation a sandbox could read every other sandbox and the service's files, reach
   * every loopback listener and bind the service's port, so none starts or resumes unless the
   * operator declared the deployment single-user (SANDBOX_ISOLATION=none). Fail closed: one
   * user at a time was tried before, and the admitted sandbox could still read the service's key.
   */
  refuseUnisolated(): void {
    const isolation = this.isolation;
    if (isolation.kind !== 'none' || isolation.declaredSingleUser) return;
    throw new AppError(
      'SERVICE_UNAVAILABLE',
      `Sandboxes cannot be isolated on this machine (${isolation.reason}), so none starts. The operator can install ` +
        'bubblewrap and passt, or set SANDBOX_ISOLATION=none for a single-user deployment.',
      { reason: 'sandbox_isolation_unavailable' },
    );
  }

  /** Before a sandbox's record is written: refused at once where it could not start. */
  async admit(_userId: string): Promise<void> {
    this.refuseUnisolated();
  }

  /**
   * Versions before isolation kept runtime.json in the sandbox's own folder, and their
   * processes run unisolated. Without isolation now, the record moves and the process is
   * adopted. With isolation the process is stopped (its next use starts it isolated), but
   * only when the file can only be ours: both it and the folder belong to the service, which
   * runs as root while sandboxes have uids of their own. A sandbox writes that file otherwise.
   */
  async migrateLegacyRecord(sandboxId: string): Promise<void> {
    const dir = this.sandboxDir(sandboxId);
    const legacy = path.join(dir, 'runtime.json');
    if (!fs.existsSync(legacy)) return;
    if (this.isolation.kind === 'none') {
      fs.mkdirSync(this.stateDir(sandboxId), { recursive: true, mode: 0o700 });
      fs.renameSync(legacy, path.join(this.stateDir(sandboxId), 'runtime.json'));
      return;
    }
    const me = process.getuid?.();
    if (this.uidOf(sandboxId) === null || fs.statSync(dir).uid !== me || fs.statSync(legacy).uid !== me) return;
    const record = loadRuntimeRecord(dir);
    fs.rmSync(legacy, { force: true });
    if (record && groupAlive(record.pid)) {
      this.log.warn({ sandboxId, pid: record.pid }, 'stopping a sandbox started without isolation by an earlier version');
      await stopProcessGroup(record.pid);
    }
  }

  private get stateRoot(): string {
    return path.join(this.rootDir, '.state');
  }
}
