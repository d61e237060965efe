/**
 * Languages of geocoding answers: the languages an Accept-Language value asks for, and country
 * names in them (ICU's CLDR names through `Intl.DisplayNames`; `native` for each country's own).
 */

/** The `accept-language` value that asks for each country's name in its own language. */
export const NATIVE = 'native';

export const regionNamesByTag = new Map<string, Intl.DisplayNames | null>();

/** ICU's country names in a BCP 47 language tag; null when ICU has no data for the language. */
export function regionNames(tag: string): Intl.DisplayNames | null {
  let names = regionNamesByTag.get(tag);
  if (names === undefined) {
    names =
      Intl.DisplayNames.supportedLocalesOf([tag]).length > 0
        ? new Intl.DisplayNames([tag], { type: 'region', fallback: 'none' })
        : null;
    regionNamesByTag.set(tag, names);
  }
  return names;
}

/** Whether country names exist in `code` (a language code from {@link preferredLanguages}). */
export function hasCountryNames(code: string): boolean {
  return code === NATIVE || regionNames(code) !== null;
}

/** Names by `language code`: bounded by the languages ICU has times the ~250 codes. */
export const countryNameCache = new Map<string, string | undefined>();

/**
 * The name of country `cc` (ISO 3166-1 alpha-2) in language `lang` (a code that
 * {@link hasCountryNames} accepts), or for {@link NATIVE} in the country's likely language
 * (CLDR's likely subtags: DE German, BE Dutch, CH German, TW Traditional Chinese); English
 * when that language has no name for it; undefined for a code ICU does not know.
 */
export function countryName(cc: string, lang: string): string | undefined {
  const key = `${lang} ${cc}`;
  // ICU's lookup costs more than the rest of a reverse answer: each name is asked once
  if (countryNameCache.has(key)) return countryNameCache.get(key);
  const tag = lang === NATIVE ? new Intl.Locale(`und-${cc}`).maximize().toString() : lang;
  const name = regionNames(tag)?.of(cc) ?? regionNames('en')?.of(cc);
  countryNameCache.set(key, name);
  return name;
}

/**
 * The languages of an Accept-Language value, best first: q-values honoured (q=0 dropped),
 * equal q in the order given; region subtags dropped (`fr-CH` is `fr`), codes lower case.
 * 3-letter ISO 639-2 codes of languages that have a 2-letter one become it (`deu` and `ger`
 * are `de`); `native` is kept as is.
 *
 * @example
 * ```ts
 * import { preferredLanguages } from 'whereabouts/geocoding';
 * console.log(preferredLanguages('fr-CH, deu;q=0.8, en;q=0.9, es;q=0')); // prints: [ 'fr', 'en', 'de' ]
 * ```
 */
export function preferredLanguages(value: string | undefined): string[] {
  if (!value) return [];
  const items: { code: string; q: number; at: number }[] = [];
  value.split(',').forEach((part, at) => {
    const [tag, ...params] = part.trim().split(';');
    const raw = (tag ?? '').trim().split(/[-_]/)[0]?.toLowerCase() ?? '';
    let code: string;
    if (raw === NATIVE) code = NATIVE;
    else if (/^[a-z]{2,3}$/.test(raw)) code = Intl.getCanonicalLocales(raw)[0] ?? raw;
    else return;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    if (Number.isFinite(q) && q > 0) items.push({ code, q, at });
  });
  items.sort((a, b) => b.q - a.q || a.at - b.at);
  return items.map((i) => i.code);
}

/**
 * The first preferred language we have country names in, else `en`. Preference order is
 * kept: a 3-letter code (for a language without a 2-letter one, such as `haw`) listed
 * before a 2-letter one wins.
 */
export function pickLanguage(value: string | undefined, available: (code: string) => boolean): string {
  return preferredLanguages(value).find(available) ?? 'en';
}

/** Country names (of an alpha-2 code, either case) in the first language of `acceptLanguage` that ICU has, else English. */
export function countryNameFor(
  acceptLanguage: string | undefined,
): (countryCode: string) => string | undefined {
  const lang = languageOf(acceptLanguage);
  return (code) => countryName(code.toUpperCase(), lang);
}

/** Languages picked per Accept-Language value; bounded, as the values come from clients. */
export const languageByValue = new Map<string, string>();

/** {@link pickLanguage} over the languages with country names, remembered per value. */
export function languageOf(acceptLanguage: string | undefined): string {
  if (acceptLanguage === undefined) return 'en';
  let lang = languageByValue.get(acceptLanguage);
  if (lang === undefined) {
    if (languageByValue.size >= 1_000) languageByValue.clear();
    lang = pickLanguage(acceptLanguage, hasCountryNames);
    languageByValue.set(acceptLanguage, lang);
  }
  return lang;
}
