/**
 * How a token is shown anywhere but its creation. A module of its own so that the library's
 * remote client can mask the token it sends without loading the token store (and SQLite).
 */

/** A token as shown anywhere but its creation: the first 4 characters and an ellipsis. */
export function maskToken(token: string): string {
  return `${token.slice(0, 4)}…`;
}
