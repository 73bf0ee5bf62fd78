'use client';
import { useRouter } from 'next/navigation';
import { useEffect } from 'react';

/** Re-renders the page's server components every `ms` while `active` (e.g. a sandbox is starting). */
export function AutoRefresh({ active, ms = 1500 }: { active: boolean; ms?: number }) {
  const router = useRouter();
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => router.refresh(), ms);
    return () => clearInterval(timer);
  }, [active, ms, router]);
  return null;
}
