/**
 * Forward geocoding: `engine.search` over the embedded places (names in other languages,
 * typos, "city, region, country", restrictions, preferences, bad input), the CLI and
 * `GET /v2/search` with tokens, the `geocoding:forward` scope and the geocoding balance.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../src/engine.js';
import type { SearchQuery, SearchResponse } from '../src/geocoding/search.js';
import { cli, serverForSuite } from './helpers.js';

function first(r: SearchResponse) {
  if (r.status !== 'ok') throw new Error(r.message);
  return r.address[0];
}

describe('engine.search', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open();
  });
  afterAll(() => engine?.close());

  const top = (q: string, more: Omit<SearchQuery, 'q'> = {}) => first(engine.search({ q, ...more }));

  it('answers Munich as an Address object for its names in several languages', () => {
    const munich = {
      display_name: 'Munich, Upper Bavaria, Bavaria, Germany',
      city: 'Munich',
      county: 'Upper Bavaria',
      state: 'Bavaria',
      country: 'Germany',
      country_code: 'de',
    };
    expect(top('münchen')).toMatchObject(munich);
    expect(top('Munich')).toMatchObject(munich);
    expect(top('Monaco di Baviera')).toMatchObject(munich);
    const m = top('Munich') ?? { lat: '', lon: '' };
    expect(Number(m.lat)).toBeCloseTo(48.137, 2);
    expect(Number(m.lon)).toBeCloseTo(11.575, 2);
  });

  it('reads "city, region" and "city country" qualifiers', () => {
    expect(top('paris, texas')).toMatchObject({ city: 'Paris', state: 'Texas', country_code: 'us' });
    expect(top('springfield, illinois')).toMatchObject({ city: 'Springfield', state: 'Illinois' });
    expect(top('london canada')).toMatchObject({ city: 'London', state: 'Ontario', country_code: 'ca' });
  });

  it('tolerates typos and ranks big places first among equal matches', () => {
    expect(top('londn')).toMatchObject({ city: 'London', country_code: 'gb' });
    expect(top('paris')).toMatchObject({ city: 'Paris', country_code: 'fr' });
  });

  it('answers a state or a country named alone with just its names, at its seat', () => {
    expect(top('Bavaria')).toEqual({
      lat: '48.13743',
      lon: '11.57549',
      display_name: 'Bavaria, Germany',
      state: 'Bavaria',
      country: 'Germany',
      country_code: 'de',
    });
    expect(top('Texas')).toMatchObject({
      display_name: 'Texas, United States',
      state: 'Texas',
      country_code: 'us',
    });
    expect(top('Texas')).not.toHaveProperty('city');
    const germany = top('Germany');
    expect(germany).toMatchObject({ display_name: 'Germany', country: 'Germany', country_code: 'de' });
    expect(germany).not.toHaveProperty('state');
    expect(top('France')).toMatchObject({ display_name: 'France', country_code: 'fr' });
    expect(top('France', { acceptLanguage: 'de' })).toMatchObject({
      display_name: 'Frankreich',
      country: 'Frankreich',
    });
    expect(top('Paris')).toMatchObject({ city: 'Paris', country_code: 'fr' });
  });

  it('restricts to countrycodes, prefers the viewbox and caps by limit', () => {
    const us = engine.search({ q: 'paris', countrycodes: 'us,CA' });
    if (us.status !== 'ok') throw new Error(us.message);
    expect(us.address.every((a) => a.country_code === 'us' || a.country_code === 'ca')).toBe(true);
    expect(top('paris', { viewbox: '-97,-94,34.5,32' })).toMatchObject({ state: 'Texas' });
    const boxed = engine.search({ q: 'paris', viewbox: [-97, -94, 34.5, 32], limit: 50 });
    expect(boxed.status === 'ok' && boxed.address.some((a) => a.country_code === 'fr')).toBe(true);
    const three = engine.search({ q: 'springfield', limit: '3' });
    expect(three.status === 'ok' && three.address.length).toBe(3);
    const many = engine.search({ q: 'springfield' });
    expect(many.status === 'ok' && many.address.length).toBe(10);
  });

  it('names the country in the requested language', () => {
    expect(top('münchen', { acceptLanguage: 'de-DE,de;q=0.9' })).toMatchObject({ country: 'Deutschland' });
    expect(top('münchen', { acceptLanguage: 'fr' })).toMatchObject({ country: 'Allemagne' });
  });

  it('builds the word index ahead on prepareSearch, and answers the same after it', async () => {
    const e = await Engine.open({ timezones: false, land: false, ipDatabases: false });
    e.prepareSearch();
    e.prepareSearch(); // a second call starts nothing new
    expect(e.search({ q: 'londn', limit: 1 })).toMatchObject({
      status: 'ok',
      address: [{ city: 'London', country_code: 'gb' }],
    });
    e.close();
    expect(() => e.prepareSearch()).toThrow(/closed/);
  });

  it('says NO_MATCHES when nothing matches', () => {
    expect(engine.search({ q: 'xqzvwkj' })).toEqual({ status: 'error', message: 'NO_MATCHES' });
    expect(engine.search({ q: 'paris', countrycodes: 'jp' })).toEqual({
      status: 'error',
      message: 'NO_MATCHES',
    });
  });

  it.each([
    ['no q', {}],
    ['empty q', { q: '  ' }],
    ['q not a string', { q: 5 }],
    ['limit 0', { q: 'paris', limit: 0 }],
    ['limit above 50', { q: 'paris', limit: 51 }],
    ['fractional limit', { q: 'paris', limit: '2.5' }],
    ['limit not a number', { q: 'paris', limit: 'ten' }],
    ['a country code of three letters', { q: 'paris', countrycodes: 'usa' }],
    ['an empty item in countrycodes', { q: 'paris', countrycodes: 'us,,fr' }],
    ['a viewbox of three numbers', { q: 'paris', viewbox: '1,2,3' }],
    ['a viewbox with a word', { q: 'paris', viewbox: '1,2,x,4' }],
    ['a viewbox latitude out of range', { q: 'paris', viewbox: '1,2,95,4' }],
    ['a too long q', { q: 'a'.repeat(501) }],
  ])('refuses %s with INVALID_REQUEST', (_name, query) => {
    expect(engine.search(query as never)).toEqual({ status: 'error', message: 'INVALID_REQUEST' });
  });

  it('says UNKNOWN_ERROR when opened without search data', async () => {
    const e = await Engine.open({ search: false, places: false, timezones: false });
    expect(e.search({ q: 'paris' })).toEqual({ status: 'error', message: 'UNKNOWN_ERROR' });
    e.close();
  });

  it('refuses to open a corrupt search file', async () => {
    await expect(Engine.open({ search: import.meta.filename })).rejects.toThrow(/search file is corrupt/);
  });
});

describe('whereabouts search', () => {
  it('prints the body for a query in several words, with the options', () => {
    const r = cli(['search', '--limit', '2', '--countrycodes', 'us', 'paris,', 'texas']);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout) as SearchResponse;
    expect(body.status === 'ok' && body.address.length).toBeLessThanOrEqual(2);
    expect(first(body)).toMatchObject({ city: 'Paris', state: 'Texas', country: 'United States' });
  });

  it('exits 1 with NO_MATCHES, 1 with INVALID_REQUEST, 2 without a query', () => {
    const none = cli(['search', 'xqzvwkj']);
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout)).toEqual({ status: 'error', message: 'NO_MATCHES' });
    expect(JSON.parse(cli(['search', '--limit', '99', 'paris']).stdout).message).toBe('INVALID_REQUEST');
    expect(cli(['search']).code).toBe(2);
  });
});

describe('GET /v2/search', () => {
  const server = serverForSuite();
  const { get } = server;

  it('answers with addresses and the balance after the charge, at both paths', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10, scopes: ['geocoding:forward'] }).token;
    const r = await get(`/v2/search?token=${token}&q=${encodeURIComponent('münchen')}&limit=1`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ok', balance: 9 });
    expect(r.body.address).toEqual([
      expect.objectContaining({ city: 'Munich', state: 'Bavaria', country: 'Germany', country_code: 'de' }),
    ]);
    const php = await get(`/v2/search.php?token=${token}&q=paris&countrycodes=us&viewbox=-97,-94,34.5,32`);
    expect(php.body).toMatchObject({ status: 'ok', balance: 8 });
    expect((php.body.address as { state: string }[])[0]?.state).toBe('Texas');
    expect(server.tokens.balance(token, 'geocoding')).toBe(8);
  });

  it('takes the language from the header, and the parameter over the header', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10 }).token;
    const q = `/v2/search?token=${token}&q=berlin&limit=1`;
    expect((await get(q, { 'accept-language': 'fr-FR,fr;q=0.9' })).body).toMatchObject({
      address: [{ country: 'Allemagne' }],
    });
    expect((await get(`${q}&accept-language=de`, { 'accept-language': 'fr' })).body).toMatchObject({
      address: [{ country: 'Deutschland' }],
    });
  });

  it('refuses bad input with INVALID_REQUEST and no match with NO_MATCHES, HTTP 200, uncharged', async () => {
    const token = server.tokens.create({ geocodingPerDay: 10 }).token;
    for (const q of [
      '',
      'q=',
      'q=paris&limit=0',
      'q=paris&limit=x',
      'q=paris&countrycodes=fra',
      'q=paris&viewbox=1,2',
    ]) {
      expect(await get(`/v2/search?token=${token}&${q}`)).toEqual({
        status: 200,
        body: { status: 'error', message: 'INVALID_REQUEST' },
      });
    }
    expect(await get(`/v2/search?token=${token}&q=xqzvwkj`)).toEqual({
      status: 200,
      body: { status: 'error', message: 'NO_MATCHES' },
    });
    expect(server.tokens.balance(token, 'geocoding')).toBe(10);
  });

  it('needs the geocoding:forward scope: 403 ACCESS_RESTRICTED, uncharged', async () => {
    const reverseOnly = server.tokens.create({ geocodingPerDay: 10, scopes: ['geocoding:reverse'] }).token;
    expect(await get(`/v2/search?token=${reverseOnly}&q=paris`)).toEqual({
      status: 403,
      body: { status: 'error', message: 'ACCESS_RESTRICTED' },
    });
    expect(server.tokens.balance(reverseOnly, 'geocoding')).toBe(10);
  });

  it('answers token errors with the 7.2 codes', async () => {
    expect((await get('/v2/search?q=paris')).body).toEqual({ status: 'error', message: 'INVALID_TOKEN' });
    const revoked = server.tokens.create({}).token;
    server.tokens.revoke(revoked);
    expect((await get(`/v2/search?token=${revoked}&q=paris`)).body.message).toBe('INACTIVE_TOKEN');
    const spent = server.tokens.create({ geocodingPerDay: 1 }).token;
    expect((await get(`/v2/search?token=${spent}&q=paris`)).body.status).toBe('ok');
    expect((await get(`/v2/search?token=${spent}&q=paris`)).body).toEqual({
      status: 'error',
      message: 'RATELIMITED_DAY',
    });
  });
});
