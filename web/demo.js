// The demo page: a MapLibre map of this server's styles, /v2/process answers drawn as a marker
// and an accuracy circle, reverse geocoding and timezone on click, search, and the static map
// URL of the view. Every request goes to the server that served the page.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const keyInput = $('key');
  keyInput.value = params.get('key') || '';
  const key = () => keyInput.value.trim();
  const q = (o) => new URLSearchParams(o).toString();

  $('request').value = JSON.stringify(
    {
      token: '',
      radio: 'lte',
      mcc: 1,
      mnc: 1,
      cells: [
        { lac: 3004, cid: 25613314, signal: -95, psc: 157, ta: 2 },
        { lac: 3004, cid: 25612291, signal: -103, psc: 146 },
      ],
      address: 1,
    },
    null,
    2,
  );

  const styleUrl = () => `${location.origin}/v3/${$('theme').value}.json?${q({ key: key() })}`;
  const map = new maplibregl.Map({
    container: 'map',
    style: key() ? styleUrl() : { version: 8, sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#e5e3df' } }] },
    center: [4.3, 52.08],
    zoom: 4,
    attributionControl: { compact: true },
  });
  map.addControl(new maplibregl.NavigationControl(), 'top-right');
  window.whereaboutsMap = map;

  /** The answer drawn on the map: accuracy circle (GeoJSON) and marker; redrawn after style changes. */
  let located = null;
  let marker = null;

  function circle(lon, lat, metres) {
    const pts = [];
    const r = metres / 6371008.8;
    const la = (lat * Math.PI) / 180;
    const lo = (lon * Math.PI) / 180;
    for (let i = 0; i <= 64; i++) {
      const b = (i / 64) * 2 * Math.PI;
      const lat2 = Math.asin(Math.sin(la) * Math.cos(r) + Math.cos(la) * Math.sin(r) * Math.cos(b));
      const lon2 = lo + Math.atan2(Math.sin(b) * Math.sin(r) * Math.cos(la), Math.cos(r) - Math.sin(la) * Math.sin(lat2));
      pts.push([(lon2 * 180) / Math.PI, (lat2 * 180) / Math.PI]);
    }
    return { type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [pts] } };
  }

  function drawLocated() {
    if (!located || !map.isStyleLoaded()) return;
    const data = circle(located.lon, located.lat, located.accuracy);
    const src = map.getSource('accuracy');
    if (src) src.setData(data);
    else {
      map.addSource('accuracy', { type: 'geojson', data });
      map.addLayer({ id: 'accuracy-fill', type: 'fill', source: 'accuracy', paint: { 'fill-color': '#4285f4', 'fill-opacity': 0.15 } });
      map.addLayer({ id: 'accuracy-line', type: 'line', source: 'accuracy', paint: { 'line-color': '#4285f4', 'line-width': 1.5 } });
    }
  }
  map.on('styledata', drawLocated);

  function setStyle() {
    if (!key()) return;
    map.setStyle(styleUrl());
    updateStatic();
  }
  $('theme').addEventListener('change', setStyle);
  keyInput.addEventListener('change', setStyle);

  function show(el, text, isError) {
    el.textContent = text;
    el.classList.toggle('error', Boolean(isError));
  }

  async function getJson(path) {
    const res = await fetch(path);
    return res.json();
  }

  $('locate').addEventListener('click', async () => {
    const answer = $('answer');
    let body;
    try {
      body = JSON.parse($('request').value);
    } catch (e) {
      show(answer, `Not JSON: ${e.message}`, true);
      return;
    }
    body.token = key();
    const res = await fetch('/v2/process', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const out = await res.json();
    if (out.status !== 'ok') {
      show(answer, `${out.status}: ${out.message}`, true);
      return;
    }
    located = { lat: out.lat, lon: out.lon, accuracy: out.accuracy };
    show(answer, `${out.lat}, ${out.lon} ± ${out.accuracy} m${out.address ? `\n${out.address}` : ''}`);
    if (marker) marker.remove();
    marker = new maplibregl.Marker().setLngLat([out.lon, out.lat]).setPopup(new maplibregl.Popup().setText(out.address || `± ${out.accuracy} m`)).addTo(map);
    drawLocated();
    const b = circle(out.lon, out.lat, out.accuracy).geometry.coordinates[0];
    const lons = b.map((p) => p[0]);
    const lats = b.map((p) => p[1]);
    map.fitBounds([[Math.min(...lons), Math.min(...lats)], [Math.max(...lons), Math.max(...lats)]], { padding: 60, maxZoom: 16 });
  });

  map.on('click', async (e) => {
    const { lat, lng } = e.lngLat.wrap();
    const where = { token: key(), lat: lat.toFixed(5), lon: lng.toFixed(5) };
    const [rev, tz] = await Promise.all([
      getJson(`/v2/reverse?${q({ ...where, zoom: String(Math.round(map.getZoom())) })}`),
      getJson(`/v2/timezone?${q(where)}`),
    ]);
    const lines = [`${where.lat}, ${where.lon}`];
    lines.push(rev.status === 'ok' ? rev.address.display_name : `address: ${rev.message}`);
    lines.push(tz.status === 'ok' ? `${tz.timezone.name} (${tz.timezone.short_name})` : `timezone: ${tz.message}`);
    new maplibregl.Popup().setLngLat(e.lngLat).setText(lines.join('\n')).addTo(map);
  });

  $('search-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const list = $('results');
    list.textContent = '';
    const out = await getJson(`/v2/search?${q({ token: key(), q: $('search').value, limit: '8' })}`);
    if (out.status !== 'ok') {
      const li = document.createElement('li');
      li.textContent = out.message;
      li.className = 'error';
      list.append(li);
      return;
    }
    for (const place of out.address) {
      const li = document.createElement('li');
      li.textContent = place.display_name;
      li.addEventListener('click', () => {
        map.flyTo({ center: [Number(place.lon), Number(place.lat)], zoom: 10 });
        new maplibregl.Popup().setLngLat([Number(place.lon), Number(place.lat)]).setText(place.display_name).addTo(map);
      });
      list.append(li);
    }
  });

  /** The static map of the view shown: same centre, zoom rounded, size of the map capped. */
  function updateStatic() {
    const c = map.getCenter().wrap();
    const canvas = map.getContainer();
    const w = Math.max(1, Math.min(640, canvas.clientWidth));
    const h = Math.max(1, Math.min(640, canvas.clientHeight));
    const p = { key: key(), center: `${c.lat.toFixed(5)},${c.lng.toFixed(5)}`, zoom: String(Math.min(18, Math.round(map.getZoom()))), size: `${w}x${h}` };
    if (located) p.markers = `color:blue|${located.lat},${located.lon}`;
    const url = `${location.origin}/v3/staticmap?${q(p)}`;
    const link = $('static-link');
    link.href = url;
    link.textContent = url;
    if (key() && $('static-preview').closest('details').open) $('static-preview').src = url;
  }
  map.on('moveend', updateStatic);
  $('static-preview').closest('details').addEventListener('toggle', updateStatic);
  updateStatic();
})();
