/** What every command gets: its options, printer, data directory, state file and SDK client. */
import { GpunetClient } from '#sdk';
import { resolve } from 'node:path';
import type { ExitCode } from './exit-codes.js';
import { DEFAULT_DATA_DIR, readState, statePath, type LocalState } from './local/state.js';
import { Printer, type Io } from './output.js';
import { resolveSettings, type ConnectionFlags, type ConnectionSettings } from './settings.js';

/** Options every command takes (see `withCommonOptions`). */
export interface CommonOptions extends ConnectionFlags {
  json?: boolean;
  dataDir?: string;
}

export class CommandContext {
  readonly out: Printer;
  private clients: GpunetClient[] = [];
  private cachedState?: Promise<LocalState | undefined>;

  constructor(
    readonly io: Io,
    readonly options: CommonOptions,
  ) {
    this.out = new Printer(io, options.json === true);
  }

  /** Absolute data directory: `--data-dir`, else `GPUNET_DATA_DIR`, else `./.gpunet`. */
  get dataDir(): string {
    return resolve(this.io.cwd, this.options.dataDir ?? this.io.env.GPUNET_DATA_DIR ?? DEFAULT_DATA_DIR);
  }

  get statePath(): string {
    return statePath(this.dataDir);
  }

  /** The state `gpunet up` wrote in the data directory, if any. */
  state(): Promise<LocalState | undefined> {
    return (this.cachedState ??= readState(this.dataDir));
  }

  /** With `admin`: the key for the `teams` and `keys` commands (see `resolveSettings`). */
  async settings(options: { admin?: boolean } = {}): Promise<ConnectionSettings> {
    const hasFlags = this.options.url && this.options.apiKey;
    // With both URL and key given, a broken state file of some other network must not matter.
    const state = hasFlags ? undefined : await this.state();
    return resolveSettings(this.options, this.io.env, state, this.statePath, options);
  }

  /** An SDK client for the resolved network; closed by {@link close}. `admin`: with the admin key. */
  async client(options: { admin?: boolean } = {}): Promise<GpunetClient> {
    const s = await this.settings(options);
    const client = new GpunetClient({ baseUrl: s.url, apiKey: s.apiKey, ...(s.natsUrl ? { natsUrl: s.natsUrl } : {}), ...(s.natsKeyFile ? { natsKeyFile: s.natsKeyFile } : {}), ...(s.team ? { team: s.team } : {}), http: { userAgent: 'gpunet-cli' } });
    this.clients.push(client);
    return client;
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
    this.clients = [];
  }
}

/** A command's body: returns its exit code (default 0). */
export type CommandBody<A extends unknown[]> = (ctx: CommandContext, ...args: A) => Promise<ExitCode | void>;
