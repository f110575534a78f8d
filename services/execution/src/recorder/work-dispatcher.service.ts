import { gangParts, type JobCheckpointed, type JobFinished, type JobPlaced, type NodeLost } from '#contracts';
import type { EventStore, RecordedEvent, Subscription } from '#event-store';
import { encodeEvent, Headers } from '#messaging';
import { injectHeaders, tracingEnabled } from '#telemetry';
import { EVENT_STORE, LOGGER, NATS_CONNECTION } from '#service-kit';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { intakeJobStreamId, placementJobStreamId, WORK_CHECKPOINT } from './recorder.streams.js';

/** Events of the store that make work for a node. */
const WORK_TYPES = ['JobPlaced', 'JobCancelRequested', 'JobFinished', 'NodeLost'] as const;

/**
 * Puts each node's work on its own subjects (`gpunet.work.<nodeId>.<type>`, stream GPUNET_WORK),
 * following the store itself (never the bus), so everything a node is sent is a copy of a
 * recorded event: for a placement, the job's JobSubmitted, a JobCancelRequested recorded before
 * it and the job's last JobCheckpointed, then the JobPlaced, to each node of the placement; a
 * cancel to the nodes the job was placed on; a gang part's JobFinished and a NodeLost to the
 * other nodes of the gangs concerned. `Nats-Msg-Id` is per copy and node, so resuming from the
 * checkpoint after a crash sends nothing twice within the duplicate window (and the agent keeps
 * copies idempotently beyond it). A first start begins at the store's head: work recorded before
 * a recorder ever ran was the agents' own to read.
 */
@Injectable()
export class WorkDispatcher {
  private subscription: Subscription | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private js: JetStreamClient | undefined;
  /** Copies sent, for tests and logs. */
  sent = 0;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.js = jetstream(this.nc);
    const saved = await this.store.loadCheckpoint(WORK_CHECKPOINT);
    const from = saved ?? (await this.store.headPosition());
    if (saved === undefined) await this.store.saveCheckpoint(WORK_CHECKPOINT, from);
    this.running = this.run(from);
    this.logger.info({ from: String(from) }, 'work dispatcher started');
  }

  async stop(): Promise<void> {
    this.closed = true;
    await this.subscription?.close();
    await this.running;
  }

  /**
   * Follows the store from `from`, dispatching each event before saving it as the checkpoint.
   * When the store fails (a PostgreSQL restart), follows it again from the last event dispatched,
   * after a growing pause: a node's work must not stop for good because the database blinked.
   */
  private async run(from: bigint): Promise<void> {
    for (let failures = 0; !this.closed; ) {
      const subscription = this.store.subscribeToAll({ fromPosition: from, filter: { types: WORK_TYPES } });
      this.subscription = subscription;
      try {
        for await (const event of subscription) {
          for (let attempt = 1; !this.closed; attempt++) {
            try {
              await this.dispatch(event);
              break;
            } catch (err) {
              this.logger.warn({ err: (err as Error).message, eventId: event.eventId, type: event.type, attempt }, 'work not dispatched yet; retrying');
              await sleep(Math.min(200 * 2 ** Math.min(attempt, 5), 5_000));
            }
          }
          if (this.closed) return;
          await this.store.saveCheckpoint(WORK_CHECKPOINT, event.position);
          from = event.position;
          failures = 0;
        }
        return; // closed
      } catch (err) {
        await subscription.close().catch(() => undefined);
        if (this.closed) return;
        failures++;
        this.logger.warn({ err: (err as Error).message, from: String(from), failures }, 'reading the store for work failed; following it again shortly');
        await sleep(Math.min(250 * 2 ** Math.min(failures, 5), 5_000));
      }
    }
  }

  private async dispatch(event: RecordedEvent): Promise<void> {
    switch (event.type) {
      case 'JobPlaced': {
        if (!event.streamId.startsWith('placement-')) return;
        const placed = event.data as JobPlaced;
        const job = await this.store.readStream(intakeJobStreamId(placed.jobId));
        const companions = [
          job.find((e) => e.type === 'JobSubmitted'),
          job.find((e) => e.type === 'JobCancelRequested'),
          await this.lastCheckpoint(placed.jobId),
        ].filter((e): e is RecordedEvent => e !== undefined);
        for (const part of gangParts(placed)) {
          for (const c of companions) await this.send(part.nodeId, c, event.eventId);
          await this.send(part.nodeId, event);
        }
        return;
      }
      case 'JobCancelRequested': {
        if (!event.streamId.startsWith('intake-')) return;
        const jobId = (event.data as { jobId: string }).jobId;
        for (const nodeId of await this.nodesOfJob(jobId)) await this.send(nodeId, event);
        return;
      }
      case 'JobFinished': {
        if (!event.streamId.startsWith('execution-')) return;
        const finished = event.data as JobFinished;
        const placed = await this.placementOf(finished.jobId, finished.attemptId);
        if (placed?.nodes === undefined) return; // only gang parts care about another part's end
        for (const part of placed.nodes) if (part.nodeId !== finished.nodeId) await this.send(part.nodeId, event);
        return;
      }
      case 'NodeLost': {
        if (!event.streamId.startsWith('placement-')) return;
        const lost = event.data as NodeLost;
        const peers = new Set<string>();
        for (const a of lost.affectedAttempts) {
          const placed = await this.placementOf(a.jobId, a.attemptId);
          for (const part of placed?.nodes ?? []) if (part.nodeId !== lost.nodeId) peers.add(part.nodeId);
        }
        for (const nodeId of peers) await this.send(nodeId, event);
        return;
      }
    }
  }

  /** Publishes a copy of `event` to the node's work subjects; `after` makes a companion's id per placement. */
  private async send(nodeId: string, event: RecordedEvent, after?: string): Promise<void> {
    const enc = encodeEvent(event, (e) => `gpunet.work.${nodeId}.${e.type}`);
    const msgID = `${event.eventId}.${nodeId}${after ? `.${after}` : ''}`;
    enc.headers.set(Headers.MsgId, msgID);
    // The node's handling continues the trace of the work in hand (this consumer's span).
    if (tracingEnabled()) injectHeaders(enc.headers);
    await this.js!.publish(enc.subject, enc.payload, { headers: enc.headers, msgID, timeout: 5_000 });
    this.sent += 1;
  }

  private async nodesOfJob(jobId: string): Promise<string[]> {
    const nodes = new Set<string>();
    for (const e of await this.store.readStream(placementJobStreamId(jobId))) {
      if (e.type === 'JobPlaced') for (const p of gangParts(e.data as JobPlaced)) nodes.add(p.nodeId);
    }
    return [...nodes];
  }

  private async placementOf(jobId: string, attemptId: string): Promise<JobPlaced | undefined> {
    return (await this.store.readStream(placementJobStreamId(jobId))).find((e) => e.type === 'JobPlaced' && (e.data as JobPlaced).attemptId === attemptId)?.data as JobPlaced | undefined;
  }

  /** The job's checkpoint with the highest sequence, among what the recorder recorded. */
  private async lastCheckpoint(jobId: string): Promise<RecordedEvent | undefined> {
    let best: RecordedEvent | undefined;
    let fromPosition = 0n;
    for (;;) {
      const page = await this.store.readAll({ filter: { types: ['JobCheckpointed'], jobId }, maxCount: 500, fromPosition });
      for (const e of page) {
        const cp = e.data as JobCheckpointed;
        if (e.streamId.startsWith('execution-') && cp.jobId === jobId && cp.sha256 !== undefined && (!best || cp.sequence > (best.data as JobCheckpointed).sequence)) best = e;
      }
      if (page.length < 500) return best;
      fromPosition = page[page.length - 1]!.position;
    }
  }
}
