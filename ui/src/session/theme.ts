import { useEffect, useState } from 'react';

export type Theme = 'light' | 'dark';

const KEY = 'switchyard.theme';

function initial(): Theme {
  const stored = window.localStorage.getItem(KEY);
  if (stored === 'light' || stored === 'dark') return stored;
  return window.matchMedia?.('(prefers-color-scheme: dark)').matches === true ? 'dark' : 'light';
}

/** The colour theme, kept in localStorage so it survives a reload; set on <html data-theme>. */
export function useTheme(): [Theme, (next: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(initial);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    window.localStorage.setItem(KEY, theme);
  }, [theme]);
  return [theme, setTheme];
}
