// Wires configuration, database, runtime and services into the domain (openDomain), and the
// domain with the HTTP wing into a running server (startServer). main.ts calls it with the
// process environment; tests call either with their own config.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './http/app.js';
import { startEmbeddedAutomation } from './automations/embedded-service.js';
import { resolveServedUi } from './http/web/served-ui.js';
import { ensureBootstrapKey, ensureDataDir, loadSecretBox, openDatabase } from './bootstrap.js';
import type { Config } from './config/config.js';
import type { DatabaseOptions } from './db/database.js';
import type { Deps } from './trpc/context.js';
import type { Logger } from './logger.js';
import { createPriceTable, litellmPricesIn, type PriceTable, type RefreshablePriceTable } from './llm-gateway/prices.js';
import { createMetrics } from './metrics.js';
import { createRateLimits } from './rate-limit.js';
import { createSandboxRuntime, type SandboxMachine } from './sandbox/index.js';
import { createServices, type ServiceOptions } from './domain.js';

export interface RunningServer {
  url: string;
  port: number;
  deps: Deps;
  bootstrapKey: { key: string; file: string } | null;
  /** Stops accepting, lets in-flight requests finish, then closes the database. */
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** The clock of time-bounded caches (tests move it instead of waiting). */
  clock?: () => number;
  /** Sees every database command the service sends (tests check them against the indexes). */
  onCommand?: DatabaseOptions['onCommand'];
  /** Profile stores other than the defaults (src/conversations/profiles.ts); tests plug theirs in here. */
  profiles?: ServiceOptions['profiles'];
  /** The process runtime's isolation and limits, found already (tests find them once for many services). */
  sandboxMachine?: SandboxMachine;
  /** The LLM gateway's price table, read already (tests read one for many services). */
  prices?: PriceTable;
}

/** The service without HTTP: database, runtime and services wired (tests call procedures on it through createCaller). */
export interface Domain {
  deps: Deps;
  /** Closes the runtime's watchers and the database. */
  close(): Promise<void>;
}

export async function openDomain(
  config: Config,
  log: Logger,
  options: ServerOptions & { webUrl?: () => string; servicePort?: () => number | null } = {},
): Promise<Domain> {
  ensureDataDir(config, log);
  const box = loadSecretBox(config, log);
  const metrics = createMetrics();
  const opened = await openDatabase(config, log, {
    registerEmbedded: true,
    ...(options.onCommand ? { onCommand: options.onCommand } : {}),
    ...(config.mongo.commandMetrics ? { onCommandDone: metrics.observeCommand } : {}),
  });
  let stopPriceRefresh = () => {};
  try {
    const runtime = await createSandboxRuntime(config, log, options.servicePort, options.sandboxMachine);
    // Read here unless given (tests read one for many services; theirs are not refreshed).
    let prices: PriceTable | null = options.prices ?? null;
    if (config.llmGateway.enabled && !prices) {
      const own = await openPriceTable(config, log);
      if (config.llmGateway.pricesRefreshMs > 0) stopPriceRefresh = own.refreshEvery(config.llmGateway.pricesRefreshMs);
      prices = own;
    }
    const services = createServices({
      db: opened.db,
      box,
      config,
      runtime,
      webUrl: options.webUrl ?? (() => config.webUrl ?? ''),
      metrics,
      log,
      prices,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.profiles ? { profiles: options.profiles } : {}),
    });
    const deps: Deps = { config, log, db: opened.db, services, metrics, runtime, limits: createRateLimits(config.rateLimits) };
    await services.sandboxKeys.indexSessionKeys(); // records of earlier versions: found by key from now on
    return {
      deps,
      close: async () => {
        stopPriceRefresh();
        await services.llmGateway?.drain(); // the LLM calls answered last are written before the database closes
        await services.audit.drain(); // so are the audit entries of the last calls
        await runtime.close();
        await opened.close();
      },
    };
  } catch (error) {
    await opened.close();
    throw error;
  }
}

/**
 * The LLM gateway's prices: LLM_PRICES, else the LiteLLM table the agent server's venv ships
 * (asked again at each refresh: the venv is installed at the first sandbox start), with the
 * operator's own table over it.
 */
function openPriceTable(config: Config, log: Logger): Promise<RefreshablePriceTable> {
  const { prices, operatorPrices } = config.llmGateway;
  return createPriceTable(
    { litellm: prices ?? (() => litellmPricesIn(config.cacheDir, config.sandbox.agentServerVersion)), operator: operatorPrices },
    log.child({ component: 'llm-prices' }),
  );
}

export async function startServer(config: Config, log: Logger, options: ServerOptions = {}): Promise<RunningServer> {
  let listeningUrl = '';
  let listeningPort: number | null = null;
  // Fetched (first start) while the database starts; a failed fetch resolves to no UI.
  const served = resolveServedUi(config, log);
  served.catch(() => undefined); // awaited below; no unhandled rejection meanwhile
  const domain = await openDomain(config, log, {
    ...options,
    webUrl: () => config.webUrl ?? listeningUrl,
    servicePort: () => listeningPort,
  });
  const { deps } = domain;
  const { services } = deps;
  try {
    const bootstrapKey = await ensureBootstrapKey(config, services);
    const app = createApp(deps, await served);
    const server = http.createServer(app);
    server.on('upgrade', app.upgrade);
    server.keepAliveTimeout = 65_000; // above common load-balancer idle timeouts
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.http.port, config.http.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const host = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host;
    listeningUrl = `http://${host}:${port}`;
    listeningPort = port;
    services.startTasks.start();
    services.webhookDispatcher.start();
    services.sandboxLifecycle.start(); // after listening: warm sandboxes need the webhook URL
    const embedded = config.automations?.embedded;
    const automations =
      embedded && services.automations.serviceKey
        ? startEmbeddedAutomation({
            ...embedded,
            serviceKey: services.automations.serviceKey,
            serviceUrl: config.webUrl ?? listeningUrl,
            dataDir: config.dataDir,
            cacheDir: config.cacheDir,
            log: log.child({ component: 'automations' }),
          })
        : null;
    return {
      url: listeningUrl,
      port,
      deps,
      bootstrapKey,
      stop: async () => {
        // Hand unfinished start tasks back first, so another replica takes them over at once.
        await services.startTasks.stop();
        await services.webhookDispatcher.stop();
        await services.sandboxLifecycle.stop();
        await automations?.stop();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Keep-alive connections that finish their in-flight request become idle only then;
        // close them as they do, rather than waiting out the keep-alive timeout.
        const reaper = setInterval(() => server.closeIdleConnections(), 100);
        server.closeIdleConnections();
        app.close(); // sockets to agent servers: upgraded, so server.close leaves them
        await closed;
        clearInterval(reaper);
        await domain.close();
      },
    };
  } catch (error) {
    await domain.close();
    throw error;
  }
}
