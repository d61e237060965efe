/** Query parameters and headers as the GET routes read them. */
import type { FastifyRequest } from 'fastify';

/** Reads a single query parameter: the first value when it was repeated; undefined when empty. */
export function queryParam(request: FastifyRequest, name: string): string | undefined {
  const query = request.query as Record<string, string | string[] | undefined> | undefined;
  const v = query?.[name];
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined || first === '' ? undefined : first;
}

/** The `accept-language` parameter, else the header of that name (the parameter overrides, spec 2.9). */
export function acceptLanguageOf(request: FastifyRequest): string | undefined {
  const header = request.headers['accept-language'];
  return queryParam(request, 'accept-language') ?? (typeof header === 'string' ? header : undefined);
}
