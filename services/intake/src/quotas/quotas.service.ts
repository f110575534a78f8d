import { GetQuotas, Queries, SetQuota, type QuotaSet, type QuotaUsage, type QuotasReply } from '#contracts';
import { requestQuery } from '#messaging';
import { CLOCK, EVENT_WRITER, LOGGER, NATS_CONNECTION, type Clock, type EventWriter } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import type { Principal } from '../auth/api-keys.js';
import { Authenticator } from '../auth/authenticator.js';
import { allows, authorize } from '../auth/permissions.js';
import { ForbiddenError } from '../common/errors.js';
import type { RequestTrace } from '../common/trace.js';
import { KeysService, type Transport } from '../keys/keys.service.js';
import { parsed } from '../common/parsed.js';

/** `intake-quota-<team>`: the team's QuotaSet events (intake writes them, placement folds them). */
export const quotaStreamId = (team: string) => `intake-quota-${team}`;

/** How long a setting waits for placement to show it before answering anyway. */
const READ_YOUR_WRITES_MS = 2_000;

/**
 * GPU quotas per team and model (decision 0027), one code path for HTTP and NATS. A `billing`
 * key sets them for any team (`quotas:set`): they bound what a team takes from a shared network,
 * so a team's own keys cannot raise them. Every key reads its own team's; `billing` reads every
 * team's. Refusals are recorded as `AdminActionRefused`, as for teams and keys.
 */
@Injectable()
export class QuotasService {
  constructor(
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly keys: KeysService,
    private readonly auth: Authenticator,
  ) {}

  /** Records a QuotaSet and answers with the quota as placement then shows it. */
  async set(principal: Principal, body: unknown, transport: Transport, trace: RequestTrace = {}): Promise<QuotaUsage> {
    const b = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const target = typeof b.team === 'string' && b.team.length <= 64 ? { team: b.team } : {};
    await this.keys.guard(principal, 'quotas:set', target, transport, () => authorize(principal, 'quotas:set'));
    const request = parsed(SetQuota, body, 'quota');
    this.auth.ring.directory.requireTeam(request.team);
    const event: QuotaSet = {
      team: request.team,
      gpuModel: request.gpuModel,
      gpus: request.gpus ?? null,
      gpuHours: request.gpuHours ?? null,
      borrow: request.borrow ?? false,
      by: { keyId: principal.keyId, team: principal.team, role: principal.role },
      setAt: this.clock.now().toISOString(),
    };
    await this.writer.append(quotaStreamId(event.team), [{ type: 'QuotaSet', data: event }], { team: event.team, ...(trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {}) });
    this.logger.info({ team: event.team, gpuModel: event.gpuModel, gpus: event.gpus, gpuHours: event.gpuHours, borrow: event.borrow, by: principal.keyId, correlationId: trace.correlationId }, 'gpu quota set');
    // Placement applies it from the bus: answer with its view once it shows this setting.
    const end = Date.now() + READ_YOUR_WRITES_MS;
    for (;;) {
      const row = (await this.fromPlacement(event.team, trace)).quotas.find((q) => q.gpuModel === event.gpuModel);
      if (row && row.setAt !== undefined && row.setAt >= event.setAt) return row;
      if (Date.now() > end) return { team: event.team, gpuModel: event.gpuModel, gpus: event.gpus, gpuHours: event.gpuHours, borrow: event.borrow, inUse: row?.inUse ?? 0, borrowed: row?.borrowed ?? 0, heldMs: row?.heldMs ?? 0, waiting: row?.waiting ?? 0, setAt: event.setAt };
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Quotas and their use: the caller's team, or with `billing` any team (or all). */
  async list(principal: Principal, body: unknown, transport: Transport, trace: RequestTrace = {}): Promise<QuotasReply> {
    const request = parsed(GetQuotas, body, 'query');
    const team = this.scope(principal, request.team);
    await this.keys.guard(principal, 'quotas:read', team === undefined ? {} : { team }, transport, () => {
      authorize(principal, 'quotas:read');
      if (team !== principal.team && !allows(principal, 'quotas:read-all-teams')) {
        throw new ForbiddenError(`API key \`${principal.keyId}\` (role ${principal.role}) reads the quotas of team ${principal.team} only, not of team ${team}; that needs a key with role billing`);
      }
    });
    return this.fromPlacement(team, trace);
  }

  /** The quotas `gpunet capacity` shows the caller: its own team's, or every team's for `billing`. */
  forCapacity(principal: Principal, trace: RequestTrace = {}): Promise<QuotasReply> {
    return this.fromPlacement(allows(principal, 'quotas:read-all-teams') ? undefined : principal.team, trace);
  }

  /** The team asked about: the one named, else the caller's own unless it may read every team. */
  private scope(principal: Principal, team: string | undefined): string | undefined {
    if (team !== undefined) return team;
    return allows(principal, 'quotas:read-all-teams') ? undefined : principal.team;
  }

  private fromPlacement(team: string | undefined, trace: RequestTrace): Promise<QuotasReply> {
    const q = Queries.Quotas;
    return requestQuery<QuotasReply>(this.nc, q.subject, team === undefined ? {} : { team }, { request: q.schema, response: q.replySchema }, trace.correlationId !== undefined ? { correlationId: trace.correlationId } : {});
  }
}
