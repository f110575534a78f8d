import { Commands, formatIssues, Queries, type ListNodeStatesReply, type NodeAdminReply } from '#contracts';
import { ValidationError } from '#errors';
import { requestQuery } from '#messaging';
import { LOGGER, NATS_CONNECTION } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Principal } from '../auth/api-keys.js';
import { authorize } from '../auth/permissions.js';
import type { RequestTrace } from '../common/trace.js';

/** The body of `POST /v1/nodes/{nodeId}/cordon|drain|uncordon`. */
export const NodeAdminBody = z.object({ reason: z.string().optional().describe('Why, for the record (required to cordon or drain).') }).strict();

const ACTIONS = { cordon: Commands.CordonNode, drain: Commands.DrainNode, uncordon: Commands.UncordonNode } as const;
export type NodeAction = keyof typeof ACTIONS;

/**
 * Cordon, drain, uncordon and list nodes for a key of role `operator` (decision 0031): intake checks
 * the role, names the operator from the key (never from the body) and asks placement, which records
 * the change. Every other role is refused (403) before anything is sent.
 */
@Injectable()
export class NodesService {
  private readonly log: Logger;
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.log = logger.child({ component: 'nodes' });
  }

  async act(principal: Principal, action: NodeAction, nodeId: string, body: unknown, t: RequestTrace): Promise<NodeAdminReply> {
    this.gate(principal, `${action} node ${nodeId}`);
    const parsed = NodeAdminBody.safeParse(body ?? {});
    if (!parsed.success) {
      const issues = formatIssues(parsed.error);
      throw new ValidationError(`invalid request: ${issues.map((i) => i.path).join(', ')}`, issues);
    }
    const c = ACTIONS[action];
    const request = { nodeId, by: `operator key ${principal.team}/${principal.keyId}`, ...(parsed.data.reason !== undefined ? { reason: parsed.data.reason } : {}) };
    const checked = c.schema.safeParse(request);
    if (!checked.success) {
      const issues = formatIssues(checked.error);
      throw new ValidationError(`invalid request: ${issues.map((i) => i.path).join(', ')}`, issues);
    }
    const reply = await requestQuery<NodeAdminReply>(this.nc, c.subject, checked.data, { request: c.schema, response: c.replySchema }, t.correlationId !== undefined ? { correlationId: t.correlationId } : {});
    this.log.info({ nodeId, nodeHost: reply.node.hostname, action, keyId: principal.keyId, changed: reply.changed, state: reply.node.state, correlationId: t.correlationId }, `node ${nodeId} ${action}: ${reply.node.state}`);
    return reply;
  }

  async list(principal: Principal, t: RequestTrace): Promise<ListNodeStatesReply> {
    this.gate(principal, 'list nodes');
    const q = Queries.ListNodeStates;
    return requestQuery<ListNodeStatesReply>(this.nc, q.subject, {}, { request: q.schema, response: q.replySchema }, t.correlationId !== undefined ? { correlationId: t.correlationId } : {});
  }

  /** Only role operator; a refusal is a warning in the log, naming the key. */
  private gate(principal: Principal, what: string): void {
    try {
      authorize(principal, 'nodes:manage');
    } catch (err) {
      this.log.warn({ keyId: principal.keyId, team: principal.team, role: principal.role }, `refused: ${what} needs a key with role operator`);
      throw err;
    }
  }
}
