/**
 * Where a command finds its network: flags first, then environment variables, then the state
 * file `gpunet up` wrote. Pure: the caller reads the environment and the state file.
 */
import type { FieldIssue } from '#contracts';
import { UsageError } from './errors.js';
import type { LocalState } from './local/state.js';

/** Connection flags every command takes. */
export interface ConnectionFlags {
  url?: string;
  apiKey?: string;
  nats?: string;
  natsKey?: string;
  team?: string;
}

/** What a command talks to, and where each setting came from (for `--verbose` and errors). */
export interface ConnectionSettings {
  url: string;
  apiKey: string;
  natsUrl?: string;
  /** The team's NKey seed file for NATS connections (uploads). */
  natsKeyFile?: string;
  team?: string;
  source: { url: Source; apiKey: Source };
}
export type Source = 'flag' | 'env' | 'state';

/** Environment variables read, with the flag each stands for. */
export const ENV = { url: 'GPUNET_URL', apiKey: 'GPUNET_API_KEY', adminApiKey: 'GPUNET_ADMIN_API_KEY', nats: 'GPUNET_NATS_URL', natsKey: 'GPUNET_NATS_NKEY_FILE', team: 'GPUNET_TEAM' } as const;

function pick(flag: string | undefined, env: string | undefined, state: string | undefined): [string | undefined, Source | undefined] {
  if (flag) return [flag, 'flag'];
  if (env) return [env, 'env'];
  if (state) return [state, 'state'];
  return [undefined, undefined];
}

/**
 * Resolves the connection settings. Throws a {@link UsageError} naming every way to give a
 * missing URL or API key (so "nothing is up" reads as what to do, not as a stack trace).
 *
 * With `admin` (the `teams` and `keys` commands) the key is `--api-key`, else
 * `GPUNET_ADMIN_API_KEY`, else `GPUNET_API_KEY`, else the operator key `gpunet up` kept in
 * state.json (`adminApiKey`).
 */
export function resolveSettings(
  flags: ConnectionFlags,
  env: Readonly<Record<string, string | undefined>>,
  state: LocalState | undefined,
  statePath: string,
  options: { admin?: boolean } = {},
): ConnectionSettings {
  const [url, urlSource] = pick(flags.url, env[ENV.url], state?.url);
  const [apiKey, keySource] = options.admin ? pick(flags.apiKey, env[ENV.adminApiKey] || env[ENV.apiKey], state?.adminApiKey) : pick(flags.apiKey, env[ENV.apiKey], state?.apiKey);
  const [natsUrl] = pick(flags.nats, env[ENV.nats], state?.natsUrl);
  const [team] = pick(flags.team, env[ENV.team], state?.team);
  const [natsKeyFile] = pick(flags.natsKey, env[ENV.natsKey], state?.natsKeyFile);
  const issues: FieldIssue[] = [];
  if (!url) issues.push({ path: '--url', message: `no API URL: no --url, no ${ENV.url}, no ${statePath}`, fix: 'start a local network with `gpunet up`, or pass `--url http://host:port`' });
  if (!apiKey && options.admin) {
    issues.push({ path: '--api-key', message: `no admin API key: no --api-key, no ${ENV.adminApiKey}, no ${ENV.apiKey}, no adminApiKey in ${statePath}`, fix: `pass an operator or admin key with \`--api-key\` or ${ENV.adminApiKey}` });
  } else if (!apiKey) issues.push({ path: '--api-key', message: `no API key: no --api-key, no ${ENV.apiKey}, no ${statePath}`, fix: `pass your team's key with \`--api-key\` or ${ENV.apiKey}` });
  if (issues.length > 0) throw new UsageError(`no gpunet network to talk to: ${issues.map((i) => i.message).join('; ')}`, issues);
  return {
    url: url!,
    apiKey: apiKey!,
    ...(natsUrl ? { natsUrl } : {}),
    ...(natsKeyFile ? { natsKeyFile } : {}),
    ...(team ? { team } : {}),
    source: { url: urlSource!, apiKey: keySource! },
  };
}
