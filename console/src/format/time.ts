/** Times: shown in the viewer's time zone; the UTC instant on hover (the `title`). */

const local = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
const localTime = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

/** `2026-12-02T11:00:00.000Z` → the viewer's local date and time. */
export function formatLocal(iso: string, options: { timeOnly?: boolean } = {}): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : (options.timeOnly ? localTime : local).format(d);
}

/** The viewer's time zone name, e.g. `Europe/Berlin`. */
export const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The UTC text for a hover: `2026-12-02 11:00:00.000 UTC`. */
export function utcTitle(iso: string): string {
  return `${iso.replace('T', ' ').replace('Z', '')} UTC`;
}
