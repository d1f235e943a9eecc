// usbflash's page: the readers' slots, an image, first-boot settings, and
// the sessions the page started, each told by the --json events its
// session prints (Server-Sent Events). No build step, no library.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

// The token is in the address usbflash serve printed (#token=...): kept
// for this server's other tabs and reloads; never sent but in a header.
const token = (() => {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) {
    localStorage.setItem('usbflash-token', fromHash);
    return fromHash;
  }
  return localStorage.getItem('usbflash-token') || '';
})();

async function post(path, body, raw) {
  const headers = { 'X-Usbflash-Token': token };
  if (!raw) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method: 'POST', headers, body: raw ? body : JSON.stringify(body) });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

// Sizes and rates as the command line prints them: decimal units.
function fmtBytes(n) {
  if (n == null || n < 0) return 'unknown';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return i === 0 ? `${n} B` : `${v.toFixed(2)} ${units[i]}`;
}
const fmtRate = (r) => `${fmtBytes(r)}/s`;
const plural = (n, w) => `${n} ${w}${n === 1 ? '' : 's'}`;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

// ---- Slots -----------------------------------------------------------

let slots = [];
const chosen = new Set();

let shownSlots = '';

function renderSlots(state) {
  $('#slots-note').textContent = state.slots_note || (state.slots.length ? '' : 'No readers found.');
  // Drawn again only when they changed: a box keeps its focus.
  const now = JSON.stringify(state.slots);
  if (now === shownSlots) return;
  shownSlots = now;
  slots = state.slots;
  const body = $('#slots tbody');
  const focused = document.activeElement && document.activeElement.dataset.target;
  body.replaceChildren();
  for (const s of slots) {
    const box = el('input', { type: 'checkbox', 'data-target': s.target, 'aria-label': `Use ${s.target}` });
    box.checked = chosen.has(s.target);
    box.addEventListener('change', () => {
      if (box.checked) chosen.add(s.target); else chosen.delete(s.target);
      renderPreview();
    });
    let holds = s.medium ? `${fmtBytes(s.bytes)}${s.card ? ', ' + s.card : ''}` : 'no card';
    if (s.write_protected) holds += ', write-protected';
    if (s.in_use) holds += `, in use: ${s.in_use}`;
    if (s.error) holds = s.error;
    const name = s.name || s.target;
    box.setAttribute('aria-label', `Use ${name}`);
    body.append(el('tr', {}, el('td', {}, box), el('td', { class: 'target', text: name }), el('td', { text: s.reader }),
      el('td', { class: s.error || s.write_protected || s.in_use ? 'bad' : '', text: holds })));
    if (focused === s.target) box.focus();
  }
  for (const t of [...chosen]) if (!slots.some((s) => s.target === t) && state.listing) chosen.delete(t);
}

// ---- Image -----------------------------------------------------------

let source = 'path';
let catalogChoice = '';
let streamFile = null;

for (const r of $$('input[name=source]')) {
  r.addEventListener('change', () => {
    source = r.value;
    for (const d of $$('.source')) d.hidden = d.dataset.source !== source;
    if (source === 'os') loadCatalog();
  });
}

let catalogLoaded = false;
async function loadCatalog() {
  if (catalogLoaded) return;
  catalogLoaded = true;
  const note = $('#catalog-note');
  note.textContent = 'Reading the OS list…';
  const r = await fetch('/api/catalog');
  const data = await r.json().catch(() => ({}));
  if (!r.ok) {
    note.textContent = data.error || r.statusText;
    catalogLoaded = false;
    return;
  }
  note.textContent = plural(data.entries.length, 'image');
  const list = $('#catalog');
  list.replaceChildren();
  for (const e of data.entries) {
    const sizes = [];
    if (e.image_download_size) sizes.push(`download ${fmtBytes(e.image_download_size)}`);
    if (e.extract_size) sizes.push(`image ${fmtBytes(e.extract_size)}`);
    if (e.release_date) sizes.push(`released ${e.release_date}`);
    const item = el('div', { class: 'entry', role: 'radio', 'aria-checked': 'false', tabindex: '-1', 'data-name': e.name },
      e.icon_path ? el('img', { src: e.icon_path, alt: '' }) : el('span'),
      el('div', {}, el('div', { class: 'name', text: e.name }), el('div', { class: 'desc', text: e.description || '' }),
        el('div', { class: 'desc', text: sizes.join(', ') })));
    item.addEventListener('click', () => chooseEntry(item));
    item.addEventListener('keydown', (ev) => {
      const items = $$('.entry', list);
      const i = items.indexOf(item);
      if (ev.key === ' ' || ev.key === 'Enter') { chooseEntry(item); ev.preventDefault(); }
      if (ev.key === 'ArrowDown' && i + 1 < items.length) { items[i + 1].focus(); ev.preventDefault(); }
      if (ev.key === 'ArrowUp' && i > 0) { items[i - 1].focus(); ev.preventDefault(); }
    });
    list.append(item);
  }
  const first = $('.entry', list);
  if (first) first.tabIndex = 0;
}

function chooseEntry(item) {
  for (const e of $$('.entry')) { e.setAttribute('aria-checked', 'false'); e.tabIndex = -1; }
  item.setAttribute('aria-checked', 'true');
  item.tabIndex = 0;
  item.focus();
  catalogChoice = item.dataset.name;
}

function chooseStream(file) {
  streamFile = file;
  $('#stream-chosen').textContent = file ? `${file.name}, ${fmtBytes(file.size)}` : '';
}
$('#image-file').addEventListener('change', (ev) => chooseStream(ev.target.files[0] || null));
const drop = $('#drop');
drop.addEventListener('dragover', (ev) => { ev.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (ev) => {
  ev.preventDefault();
  drop.classList.remove('over');
  if (ev.dataTransfer.files.length) chooseStream(ev.dataTransfer.files[0]);
});

function image() {
  const img = {};
  const sum = $('#image-sha256').value.trim();
  if (sum) img.sha256 = sum;
  switch (source) {
    case 'path': img.path = $('#image-path').value.trim(); if (!img.path) throw new Error('Give the path of the image file.'); break;
    case 'url': img.url = $('#image-url').value.trim(); if (!img.url) throw new Error('Give the URL of the image.'); break;
    case 'os': img.os = catalogChoice; if (!img.os) throw new Error('Choose an image of the OS list.'); break;
    case 'stream':
      if (!streamFile) throw new Error('Drop an image file, or choose one.');
      img.stream = { name: streamFile.name, size: streamFile.size };
      break;
  }
  return img;
}

// ---- First-boot settings -----------------------------------------------

function customization() {
  const v = (id) => $(id).value.trim();
  const c = {};
  if (v('#c-hostname')) c.hostname = v('#c-hostname');
  if (v('#c-user')) c.user = v('#c-user');
  if ($('#c-password').value) c.password = $('#c-password').value;
  if ($('#c-ssh').checked) c.ssh = true;
  const keys = $('#c-keys').value.split('\n').map((k) => k.trim()).filter(Boolean);
  if (keys.length) c.ssh_keys = keys;
  const wifi = {};
  if (v('#c-ssid')) wifi.ssid = v('#c-ssid');
  if ($('#c-wifipass').value) wifi.password = $('#c-wifipass').value;
  if (v('#c-country')) wifi.country = v('#c-country');
  if ($('#c-hidden').checked) wifi.hidden = true;
  if (Object.keys(wifi).length) c.wifi = wifi;
  if (v('#c-timezone')) c.timezone = v('#c-timezone');
  if (v('#c-keymap')) c.keymap = v('#c-keymap');
  if (v('#c-locale')) c.locale = v('#c-locale');
  if (v('#c-format')) c.init_format = v('#c-format');
  return Object.keys(c).length ? c : null;
}

// renderPreview shows what {n} becomes on each chosen card.
function renderPreview() {
  const h = $('#c-hostname').value.trim();
  const cards = [...chosen];
  if (!h.includes('{n}') || !cards.length) { $('#custom-preview').textContent = ''; return; }
  const names = slots.filter((s) => chosen.has(s.target)).map((s) => s.name || s.target);
  $('#custom-preview').textContent = 'Hostnames: ' + names.map((t, i) => `${h.replaceAll('{n}', String(i + 1))} on ${t}`).join(', ');
}
$('#c-hostname').addEventListener('input', renderPreview);
$('#custom-form').addEventListener('submit', (ev) => ev.preventDefault());

// ---- Actions -----------------------------------------------------------

function formError(msg) { $('#form-error').textContent = msg || ''; }

async function start(kind, extra = {}) {
  formError('');
  try {
    const req = { kind, ...extra };
    if (kind === 'write' || kind === 'station' || kind === 'verify') req.image = image();
    if (kind === 'write' || kind === 'station') {
      const c = customization();
      if (c) req.customize = c;
      if (!$('#o-verify').checked) req.no_verify = true;
      if ($('#o-eject').checked) req.eject = true;
      if ($('#o-check').checked) req.check = true;
    }
    if (kind !== 'station') {
      // The cards in the order the list shows them: {n} counts in it.
      req.targets = slots.map((s) => s.target).filter((t) => chosen.has(t));
      if (!req.targets.length) throw new Error('Choose the cards first (the Use column).');
      if (kind !== 'write' && req.targets.length !== 1) throw new Error(`Choose one card to ${kind}.`);
    }
    const { id } = await post('/api/jobs', req);
    if (req.image && req.image.stream) {
      upload(id, streamFile).catch((e) => formError(`The dropped file: ${e.message}`));
    }
  } catch (e) {
    formError(e.message);
  }
}

// upload sends a dropped file as the session reads it, a piece at a time,
// each once the one before was taken: nothing is stored on the way.
async function upload(id, file) {
  const piece = 1 << 20;
  for (let off = 0; off < file.size; off += piece) {
    const end = Math.min(off + piece, file.size);
    const bytes = await file.slice(off, end).arrayBuffer();
    await post(`/api/jobs/${id}/image?offset=${off}&end=${end === file.size ? 1 : 0}`, bytes, true);
  }
}

$('#do-write').addEventListener('click', () => start('write'));
$('#do-verify').addEventListener('click', () => start('verify'));
$('#do-check').addEventListener('click', () => start('check'));
$('#do-bench').addEventListener('click', () => start('bench'));
$('#do-station').addEventListener('click', () => {
  formError('');
  try { image(); } catch (e) { formError(e.message); return; }
  const list = $('#station-readers');
  list.replaceChildren(...slots.map((s) => el('li', { text: `${s.name || s.target} (${s.reader})` })));
  $('#station-question').showModal();
  $('#station-no').focus();
});
$('#station-yes').addEventListener('click', () => { $('#station-question').close(); start('station', { confirm: true }); });
$('#station-no').addEventListener('click', () => $('#station-question').close());

// ---- The question before cards are overwritten ----------------------------

let asked = null; // the job whose question the dialog shows

function showQuestion(job) {
  const d = $('#question');
  if (!job) {
    if (d.open) d.close();
    asked = null;
    return;
  }
  if (asked === job.id && d.open) return;
  asked = job.id;
  const q = job.question;
  $('#question-cards').replaceChildren(...q.cards.map((c) => el('li', {}, el('strong', { text: c.target }), el('br'), c.identity.trim())));
  $('#question-text').textContent = q.text;
  const targets = q.cards.map((c) => c.target);
  const yes = $('#question-yes');
  yes.textContent = `Overwrite ${targets.join(' and ')}`;
  yes.onclick = () => answer(job.id, true, targets);
  $('#question-no').onclick = () => answer(job.id, false, []);
  d.oncancel = (ev) => { ev.preventDefault(); answer(job.id, false, []); };
  if (!d.open) d.showModal();
  $('#question-no').focus();
}

async function answer(id, write, targets) {
  $('#question').close();
  try { await post(`/api/jobs/${id}/answer`, { write, targets }); } catch (e) { formError(e.message); }
}

// ---- Sessions ------------------------------------------------------------

const jobs = new Map();

class JobView {
  constructor(st) {
    this.id = st.id;
    this.kind = st.kind;
    this.root = $('#job-template').content.firstElementChild.cloneNode(true);
    this.root.id = `job-${st.id}`;
    this.root.setAttribute('aria-labelledby', `job-${st.id}-title`);
    $('.job-title', this.root).id = `job-${st.id}-title`;
    $('.job-title', this.root).textContent = st.title;
    $('.job-stop', this.root).addEventListener('click', () => this.stop());
    $('.job-station', this.root).hidden = st.kind !== 'station';
    this.cards = new Map();
    this.single = '';
    this.checksum = '';
    this.phase = '';
    $('#jobs').prepend(this.root);
    this.es = new EventSource(`/api/jobs/${st.id}/events`);
    this.es.onmessage = (m) => this.handle(JSON.parse(m.data));
    this.es.addEventListener('end', () => this.es.close());
  }

  say(msg) { $('.job-live', this.root).textContent = msg; }

  async stop() {
    try { await post(`/api/jobs/${this.id}/stop`, {}); } catch (e) { formError(e.message); }
  }

  update(st) {
    const status = $('.job-status', this.root);
    let text;
    if (st.running) {
      text = st.stopping ? 'Stopping: the cards being written stop after the command in flight, synced' : (st.question ? 'Waiting for your answer' : 'Running');
      if (st.awaits_stream) text = 'Waiting for the dropped file';
    } else {
      text = st.exit_code === 0 ? 'Done' : `Ended: ${st.exit_name} (exit code ${st.exit_code})`;
    }
    status.textContent = text;
    status.className = `job-status ${!st.running ? (st.exit_code === 0 ? 'ok' : 'bad') : ''}`;
    this.root.dataset.state = st.running ? 'running' : (st.exit_code === 0 ? 'ok' : 'failed');
    $('.job-stop', this.root).hidden = !st.running;
    $('.job-stop', this.root).disabled = !!st.stopping;
    if (st.kind === 'station') {
      // Each slot's last record, for a slot whose events a long station
      // no longer keeps.
      for (const rec of Object.values(st.slots)) {
        if (!this.cards.has(rec.target)) this.handle(rec);
      }
      $('.n-cards', this.root).textContent = st.cards;
      $('.n-ok', this.root).textContent = st.succeeded;
      $('.n-failed', this.root).textContent = st.failed;
      const box = $('.job-recent-box', this.root);
      box.hidden = st.recent.length === 0;
      box.open = true;
      $('.job-recent tbody', this.root).replaceChildren(...st.recent.slice().reverse().map((raw) => {
        const r = raw;
        return el('tr', {}, el('td', { text: new Date(r.finished).toLocaleTimeString() }), el('td', { text: r.slot || r.target }),
          el('td', { text: `${fmtBytes(r.capacity)}${r.serial ? ', serial ' + r.serial : ''}` }),
          el('td', { class: r.error ? 'bad' : 'ok', text: r.error ? `${r.result}: ${r.error}` : (r.verified ? 'verified' : 'written') }),
          el('td', { text: (r.rate / 1e6).toFixed(1) }));
      }));
    }
    if (st.files && st.files.includes('plot.svg')) {
      const fig = $('.job-plot', this.root);
      if (fig.hidden) {
        fig.hidden = false;
        $('img', fig).src = `/api/jobs/${this.id}/files/plot.svg`;
        $('img', fig).alt = 'Bench: read (and write) rate at each transfer size';
        $('figcaption', fig).textContent = 'Rate at each transfer size';
      }
    }
  }

  card(name) {
    let c = this.cards.get(name);
    if (!c) {
      const root = $('#card-template').content.firstElementChild.cloneNode(true);
      root.dataset.target = name;
      $('.card-name', root).textContent = name;
      $('progress', root).setAttribute('aria-label', `Progress of ${name}`);
      // In the order of their names: a station's slots keep their places.
      const list = $('.job-cards', this.root);
      const after = [...list.children].find((e) => e.dataset.target > name);
      list.insertBefore(root, after || null);
      c = { root, phase: '', t0: 0, d0: 0, last: 0, done: false };
      this.cards.set(name, c);
    }
    return c;
  }

  // progress shows one card's phase and bytes, and its rate over the
  // phase (from the events' times).
  progress(name, phase, done, total, failed, time, rate) {
    const c = this.card(name);
    if (failed) {
      // Its bytes stay where it stopped; its card event says why.
      $('.card-phase', c.root).textContent = 'failed';
      return;
    }
    if (c.done && phase === 'write' && done < c.last) {
      // A station's slot with a new card in it.
      c.done = false;
      $('.card-result', c.root).textContent = '';
      $('.card-result', c.root).className = 'card-result';
      c.root.dataset.result = '';
    }
    if (c.done) return;
    const t = Date.parse(time);
    if (phase !== c.phase || done < c.last) {
      if (phase !== c.phase) this.say(`${name}: ${phase}`);
      c.phase = phase;
      c.t0 = t;
      c.d0 = done;
    }
    c.last = done;
    if (rate == null && t - c.t0 >= 1000) rate = ((done - c.d0) * 1000) / (t - c.t0);
    $('.card-phase', c.root).textContent = failed ? 'failed' : phase;
    const bar = $('progress', c.root);
    if (total > 0) {
      bar.max = total;
      bar.value = done;
      bar.setAttribute('aria-valuetext', `${phase} ${Math.floor((done * 100) / total)}%`);
    } else {
      bar.removeAttribute('value');
    }
    let text = `${fmtBytes(done)}${total > 0 ? ' of ' + fmtBytes(total) : ''}`;
    if (rate != null && rate > 0) text += `, ${fmtRate(rate)}`;
    $('.card-bytes', c.root).textContent = text;
  }

  result(name, ok, text, advice) {
    const c = this.card(name);
    c.done = true;
    const p = $('.card-result', c.root);
    p.className = `card-result ${ok ? 'ok' : 'bad'}`;
    p.replaceChildren(text);
    if (advice) p.append(el('pre', { class: 'advice', text: advice }));
    c.root.dataset.result = ok ? 'ok' : 'failed';
    $('.card-phase', c.root).textContent = ok ? 'done' : 'failed';
    if (ok) {
      const bar = $('progress', c.root);
      bar.value = bar.max;
    }
    this.say(`${name}: ${text}`);
    const slot = $('.card-slot', c.root);
    if (!slot.hidden && c.root.dataset.slot === 'card') slot.textContent = 'Card in: take it out, insert the next';
  }

  note(msg, hint) {
    const li = el('li', { text: msg });
    if (hint) li.append(el('br'), hint);
    $('.job-notes', this.root).append(li);
    const notes = $$('.job-notes li', this.root);
    if (notes.length > 200) notes[0].remove();
  }

  setChecksum(text, good) {
    const p = $('.job-checksum', this.root);
    p.textContent = text;
    p.className = `job-checksum ${good === true ? 'ok' : good === false ? 'bad' : 'quiet'}`;
  }

  handle(ev) {
    switch (ev.event) {
      case 'start':
        if (ev.image) $('.job-image', this.root).textContent = `${ev.image} (${ev.format}, ${ev.size >= 0 ? fmtBytes(ev.size) + (ev.size_exact ? '' : ' or so') : 'size unknown'})`;
        if (ev.target) { this.single = ev.target; this.card(ev.target); }
        if (ev.command === 'write' || ev.command === 'verify') this.setChecksum('Checksum: not checked (none found beside the image)', null);
        break;
      case 'device':
        if (!this.single || this.kind !== 'write') this.single = ev.target;
        this.card(ev.target);
        $('.card-bytes', this.card(ev.target).root).textContent = `${fmtBytes(ev.capacity)} card`;
        break;
      case 'phase':
        this.phase = ev.phase;
        break;
      case 'progress':
        if (!this.single) break;
        if (ev.unit) {
          // A bench measures points, not bytes.
          const c = this.card(this.single);
          $('.card-phase', c.root).textContent = ev.phase;
          const bar = $('progress', c.root);
          bar.max = Math.max(ev.total, 1);
          bar.value = ev.done;
          $('.card-bytes', c.root).textContent = `${ev.done} of ${ev.total} ${ev.unit}`;
          break;
        }
        this.progress(this.single, ev.phase, ev.done, ev.total, false, ev.time, ev.rate);
        break;
      case 'slot': {
        // A station's slot: every one shows, with a card in it or not.
        const c = this.card(ev.target);
        const line = $('.card-slot', c.root);
        line.hidden = false;
        c.root.dataset.slot = ev.card ? 'card' : 'empty';
        line.textContent = ev.card ? (c.done ? 'Card in: take it out when done' : 'Card in')
          : (c.done ? 'Empty: the card above was taken out; insert the next' : 'Empty: insert a card');
        if (c.done && ev.card) line.textContent = 'Card in';
        this.say(`${ev.target}: ${ev.card ? 'card inserted' : 'empty'}`);
        break;
      }
      case 'card_progress':
        this.progress(ev.target, ev.phase, ev.done, ev.total, ev.failed, ev.time);
        break;
      case 'download': {
        const p = $$('.card-download', this.root);
        const text = `Download: ${fmtBytes(ev.bytes)}${ev.total > 0 ? ' of ' + fmtBytes(ev.total) : ''}, ${fmtRate(ev.rate)}; ` +
          (ev.bound === 'download' ? 'the download sets the pace' : 'the write sets the pace') + (ev.resumes ? `, resumed ${plural(ev.resumes, 'time')}` : '');
        for (const x of p) { x.hidden = false; x.textContent = text; }
        break;
      }
      case 'checksum': {
        let text;
        if (ev.state === 'matched') text = `Checksum: matched ${ev.from}`;
        else if (ev.state === 'checking') text = `Checksum: checked against ${ev.from} as it is written`;
        else text = 'Checksum: not checked (none found beside the image)';
        if (ev.signed_by) text += `, signed by ${ev.signed_by}`;
        this.setChecksum(text, ev.state === 'matched' ? true : null);
        break;
      }
      case 'note':
        this.note(ev.message, ev.hint);
        break;
      case 'block_map':
        this.note(`Block map ${ev.bmap}: ${ev.ranges} ranges, ${fmtBytes(ev.mapped_bytes)} of ${fmtBytes(ev.image_size)} mapped`);
        break;
      case 'card': {
        let text;
        const ok = ev.error === '';
        if (ok) text = ev.verified ? `Verified: ${fmtBytes(ev.bytes)} written and read back the same (${fmtRate(ev.rate)})` : `Written: ${fmtBytes(ev.bytes)} (not read back)`;
        else text = `${ev.result === 'removed' ? 'Removed' : 'Failed'}: ${ev.error}`;
        if (ev.bad_lba != null) text += `. First bad LBA: ${ev.bad_lba} (the image has ${ev.expected}, the card ${ev.read})`;
        this.result(ev.target, ok, text, ev.hint);
        break;
      }
      case 'summary':
        this.summary(ev);
        break;
      case 'error':
        // After a several cards' summary, which it follows.
        $('.job-result', this.root).append(el('p', { class: 'bad', role: 'alert', text: ev.message }),
          ...(ev.hint ? [el('pre', { class: 'advice', text: ev.hint })] : []));
        if (this.single && !this.cards.get(this.single)?.done && this.kind !== 'write') this.result(this.single, false, ev.message, ev.hint);
        break;
      case 'restored':
        this.note(`Restored and verified bytes ${ev.offset} to ${ev.offset + ev.length}`);
        break;
    }
  }

  summary(ev) {
    const res = $('.job-result', this.root);
    switch (ev.command) {
      case 'write':
        if (ev.cards != null) {
          res.replaceChildren(el('p', { class: ev.failed ? 'bad' : 'ok', text: `${plural(ev.cards, 'card')}: ${ev.succeeded} written${ev.verify ? ' and verified' : ''}, ${ev.failed} failed` }));
          if (ev.sha256) res.append(el('p', { class: 'quiet', text: `SHA-256 ${ev.sha256}` }));
        }
        break;
      case 'verify':
        this.result(this.single, true, `Matches: ${fmtBytes(ev.bytes)} compared (${fmtRate(ev.rate)})`);
        break;
      case 'check': {
        const text = ev.fake
          ? `FAKE: it claims ${fmtBytes(ev.capacity)} but holds ${fmtBytes(ev.usable_size)} (${ev.kind}); usable size ${ev.usable_size} bytes`
          : `No fake capacity: ${fmtBytes(ev.capacity)} hold what is written`;
        this.result(ev.target, !ev.fake, text, ev.restored ? 'Every block the check wrote was put back and read back the same.' : '');
        break;
      }
      case 'bench': {
        const rec = ev.recommended_transfer_size > 0
          ? `Recommended transfer size ${fmtBytes(ev.recommended_transfer_size)}: the smallest within 2% of the best ${fmtRate(ev.best_rate)} (${ev.recommended_from})`
          : 'Nothing measured to recommend from';
        this.result(ev.target, true, rec);
        break;
      }
    }
  }
}

function renderJobs(state) {
  $('#no-jobs').hidden = state.jobs.length > 0;
  const present = new Set();
  let question = null;
  // Oldest first, so each new one is put on top.
  for (const st of state.jobs.slice().reverse()) {
    present.add(st.id);
    let v = jobs.get(st.id);
    if (!v) { v = new JobView(st); jobs.set(st.id, v); }
    v.update(st);
    if (st.question && !question) question = st;
  }
  for (const [id, v] of jobs) {
    if (!present.has(id)) { v.es.close(); v.root.remove(); jobs.delete(id); }
  }
  showQuestion(question);
}

// ---- State ---------------------------------------------------------------

let shownSeq = -1;

function render(state) {
  // A state older than the one shown would undo it: a question asked
  // meanwhile would close.
  if (state.seq < shownSeq) return;
  shownSeq = state.seq;
  $('#version').textContent = state.version ? `version ${state.version}` : '';
  renderSlots(state);
  renderJobs(state);
  $('#source-os').disabled = !state.catalog;
}

function connect() {
  const es = new EventSource('/api/events');
  es.addEventListener('state', (m) => {
    $('#connection').textContent = 'Connected';
    render(JSON.parse(m.data));
  });
  es.onerror = () => { $('#connection').textContent = 'Reconnecting… (a write goes on without this page)'; };
}

$('#notoken').hidden = !!token;
for (const b of $$('.actions button')) if (!token && b.id.startsWith('do-')) b.disabled = true;
connect();
