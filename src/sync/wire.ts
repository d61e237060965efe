/**
 * The `GET /v2/sync` wire format that the server (src/server/sync.ts) and the client
 * (src/sync/remote.ts) share. The body is a gzip CSV in an import format; docs/sync.md.
 */

/** Response headers of a `/v2/sync` page. */
export const SyncHeader = {
  /** End of the window (unix seconds, exclusive): the next pull's `since`. */
  until: 'x-sync-until',
  /** Cursor of the next page; absent on the last page. */
  next: 'x-sync-next',
  /** Rows in this page's body: stations, masts on a `masts` page, cells on a `levels` page. */
  stations: 'x-sync-stations',
  /** `cells`, `wifi`, `masts` or `levels`: which import format the body is in (absent when empty). */
  kind: 'x-sync-kind',
} as const;
