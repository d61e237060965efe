/**
 * Where tokens are kept, chosen by one setting: a directory (SQLite, `DIR/tokens.sqlite`) or a
 * `postgres://` / `postgresql://` URL (PostgreSQL, shared by several servers; docs/deploy.md).
 */
import { PgTokenStore, type PgTokenStoreOptions } from './pg-store.js';
import type { TokenStorage } from './storage.js';
import { TokenStore, type TokenStoreOptions } from './store.js';

/** The environment variable holding the store URL, so that a password stays out of process lists. */
export const STORE_URL_ENV = 'WHEREABOUTS_STORE_URL';

/** Whether `where` names a PostgreSQL database rather than a directory. */
export function isPostgresUrl(where: string): boolean {
  return /^postgres(ql)?:\/\//i.test(where);
}

/** Opens the token store at `where` (a directory or a PostgreSQL URL) with the options of its kind. */
export async function openTokenStorage(
  where: string,
  options: { sqlite?: TokenStoreOptions; postgres?: PgTokenStoreOptions } = {},
): Promise<TokenStorage> {
  if (isPostgresUrl(where)) return PgTokenStore.open(where, options.postgres);
  return TokenStore.open(where, options.sqlite);
}
