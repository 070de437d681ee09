import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';

// An axe-style audit of what is on screen: the contrast of every visible text against its
// effective background (WCAG 2 relative luminance), every control's accessible name, and
// horizontal overflow of the page and of every scrolling box. Plain JavaScript in a string, so
// it runs in the page as written (no transpiler helpers).

/** One text whose contrast is below the minimum. */
export interface LowContrast {
  text: string;
  ratio: number;
  color: string;
  background: string;
  where: string;
}

const CONTRAST_SCRIPT = `(() => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, under) => {
    const a = top.a + under.a * (1 - top.a);
    if (a === 0) return { r: 0, g: 0, b: 0, a: 0 };
    const mix = (x, y) => (x * top.a + y * under.a * (1 - top.a)) / a;
    return { r: mix(top.r, under.r), g: mix(top.g, under.g), b: mix(top.b, under.b), a };
  };
  const lum = (c) => {
    const ch = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  };
  const describe = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      parts.unshift(e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\\s+/).join('.') : ''));
    }
    return parts.join(' > ');
  };
  // The colour behind an element: its own background and its ancestors', composited, on the canvas colour.
  const backdrop = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.backgroundImage !== 'none' && !s.backgroundImage.startsWith('url(')) return null;
      const c = parse(s.backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = parse(getComputedStyle(document.documentElement).backgroundColor) || { r: 255, g: 255, b: 255, a: 1 };
    if (bg.a < 1) bg = over(bg, { r: 255, g: 255, b: 255, a: 1 });
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const opacity = (el) => { let o = 1; for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity); return o; };
  const out = [];
  let checked = 0;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim();
    const el = n.parentElement;
    if (!text || !el || el.closest('svg, script, style, [aria-hidden="true"]')) continue;
    // Disabled controls are exempt from the contrast minimum (WCAG 1.4.3).
    if (el.closest(':disabled, [aria-disabled="true"]')) continue;
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const rect = range.getBoundingClientRect();
    if (rect.width < 1 || rect.height < 1) continue;
    const fg0 = parse(getComputedStyle(el).color);
    const bg = backdrop(el);
    if (!fg0 || !bg) continue;
    const fg = over({ ...fg0, a: fg0.a * opacity(el) }, bg);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    checked++;
    if (ratio < 4.5) {
      const rgb = (c) => 'rgb(' + [c.r, c.g, c.b].map(Math.round).join(',') + ')';
      out.push({ text: text.slice(0, 40), ratio: Math.round(ratio * 100) / 100, color: rgb(fg), background: rgb(bg), where: describe(el) });
    }
  }
  return { checked, low: out };
})()`;

/** Every visible text below 4.5:1 against its effective background. */
export async function lowContrastTexts(page: Page): Promise<LowContrast[]> {
  const { checked, low } = await page.evaluate<{ checked: number; low: LowContrast[] }>(CONTRAST_SCRIPT);
  assert.ok(checked > 0, 'the audit found visible text');
  return low;
}

const OVERFLOW_SCRIPT = `(() => {
  const out = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) out.push('document: scrollWidth ' + root.scrollWidth + ' > ' + root.clientWidth);
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('.react-flow, textarea, pre')) continue;
    const s = getComputedStyle(el);
    const scrolls = s.overflowX === 'auto' || s.overflowX === 'scroll';
    const clips = s.overflowX === 'hidden' || s.overflowX === 'clip';
    if (!scrolls && !clips) continue;
    if (el.clientWidth === 0 || el.scrollWidth <= el.clientWidth + 1) continue;
    // A box that clips on purpose (ellipsis, line clamp) is fine; one that scrolls or cuts controls is not.
    if (clips && (s.textOverflow === 'ellipsis' || el.querySelector('button, input, select, textarea, a') === null)) continue;
    out.push((el.getAttribute('aria-label') || el.className || el.tagName) + ': scrollWidth ' + el.scrollWidth + ' > clientWidth ' + el.clientWidth);
  }
  return out;
})()`;

/** The page and every box on it that is wider than its room (a horizontal scrollbar or cut controls). */
export async function horizontalOverflow(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(OVERFLOW_SCRIPT);
}

const CONTROLS = 'button|textbox|combobox|checkbox|switch|spinbutton|searchbox|link|radio|tab|slider';
/** Lines of the accessibility tree that are a control without a name (`- button`, `- textbox: value`). */
const UNNAMED = new RegExp(`^\\s*- (${CONTROLS})(:| \\[|$)`, 'm');

/** Interactive controls without an accessible name. */
export async function unnamedControls(page: Page): Promise<string[]> {
  const tree = await page.locator('body').ariaSnapshot();
  return tree.split('\n').filter((line) => UNNAMED.test(line));
}

/** The top bar holds one line: its nav links share one row. */
export async function navRows(page: Page): Promise<number> {
  return page.evaluate<number>(
    `new Set([...document.querySelectorAll('header.topbar nav a')].map((a) => Math.round(a.getBoundingClientRect().top))).size`,
  );
}
