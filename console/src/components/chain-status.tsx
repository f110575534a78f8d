/**
 * The chain's verification status (`GET /v1/audit/chain`): verified up to position N at time T,
 * or broken at position N and why. Opening it verifies the tail since the ledger's last pass;
 * "Verify now" walks the whole store again (`full=true`), which takes a while on a large store.
 */
import { useEffect, useState } from 'react';
import { must, type Schemas } from '../api/client';
import { useSession } from '../session';
import { ErrorBox, Loading, Section, Time } from './common';

type ChainStatus = Schemas['ChainStatus'];

export function ChainStatusPanel() {
  const { api } = useSession();
  const [status, setStatus] = useState<ChainStatus>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState<'tail' | 'full' | undefined>('tail');

  const verify = async (full: boolean) => {
    setBusy(full ? 'full' : 'tail');
    setError(undefined);
    try {
      setStatus(await must(api.GET('/v1/audit/chain', { params: { query: full ? { full: true } : {} } })));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };
  useEffect(() => {
    void verify(false);
    // Once per opening of the page; the button asks again.
  }, [api]);

  const s = status;
  return (
    <Section
      title="Chain verification"
      actions={
        <button type="button" onClick={() => void verify(true)} disabled={busy !== undefined}>
          {busy === 'full' ? 'Verifying…' : 'Verify now'}
        </button>
      }
    >
      {busy && <Loading label={busy === 'full' ? 'Verifying every event of the store' : 'Verifying the events since the last pass'} />}
      <ErrorBox error={error} />
      {s && (
        <div className={`chain ${s.verified ? 'chain-ok' : 'chain-bad'}`} data-testid="chain-status" data-verified={String(s.verified)} aria-busy={busy !== undefined}>
          {s.verified ? (
            <p className="chain-head">
              <span aria-hidden="true">✓ </span>Verified up to position <strong className="num">{s.verifiedUpTo}</strong> at <Time iso={s.checkedAt} />
            </p>
          ) : (
            <p className="chain-head">
              <span aria-hidden="true">✗ </span>Broken at position <strong className="num">{s.firstBad?.position}</strong>
              {s.firstBad && <> in stream <code>{s.firstBad.streamId}</code>: {s.firstBad.reason}</>}
            </p>
          )}
          <dl className="facts">
            <dt>Checked</dt>
            <dd>
              {s.events} event(s){s.verified ? ` in ${s.streams} stream(s)` : ''} up to position {s.verifiedUpTo} (store head {s.headPosition}); this pass {s.pass === 'full' ? 'walked the whole store' : 'verified the tail since the last pass'}: {s.checkedNow} event(s) in {s.durationMs} ms, at <Time iso={s.checkedAt} />
            </dd>
            <dt>Last full walk</dt>
            <dd>{s.lastFullAt ? <Time iso={s.lastFullAt} /> : 'none that held'}</dd>
            <dt>Signed heads</dt>
            <dd>
              {s.signatures === 'unchecked' ? 'not checked: the ledger holds no network key to check them with. ' : ''}
              {s.latestSignedHead ? (
                <>
                  latest digest #{s.latestSignedHead.sequence} covers position {s.latestSignedHead.position}, signed <Time iso={s.latestSignedHead.signedAt} /> by <code>{s.latestSignedHead.publicKey}</code>
                </>
              ) : (
                'no signed digest recorded yet'
              )}
              {s.unsignedAfter !== undefined && <span className="muted"> (events after position {s.unsignedAfter} are not yet covered by a signature)</span>}
            </dd>
          </dl>
        </div>
      )}
    </Section>
  );
}
