import { WORK_STREAM } from '#contracts';
import type { JetStreamManager } from '@nats-io/jetstream';

/**
 * The work `GPUNET_WORK` holds for `nodeId` (its `gpunet.work.<nodeId>.>` subjects), in stream
 * order, read message by message: on a work-queue stream the server refuses a second consumer on
 * the node's subjects, and a peek must not take the work from the node's own.
 */
export async function workHeldFor(jsm: JetStreamManager, nodeId: string): Promise<{ subject: string; type: string; jobId: string }[]> {
  const { state } = await jsm.streams.info(WORK_STREAM);
  const held: { subject: string; type: string; jobId: string }[] = [];
  if (state.messages === 0) return held;
  for (let seq = state.first_seq; seq <= state.last_seq; seq += 1) {
    const m = await jsm.streams.getMessage(WORK_STREAM, { seq }).catch(() => undefined); // acknowledged and removed
    if (!m?.subject.startsWith(`gpunet.work.${nodeId}.`)) continue;
    const body = m.json<{ type: string; data: { jobId: string } }>();
    held.push({ subject: m.subject, type: body.type, jobId: body.data.jobId });
  }
  return held;
}
