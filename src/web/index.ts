// Routes for browsers: the sign-in page and the web UI (or the small home page without one).
import express, { type Router } from 'express';
import type { Deps } from '../context.js';
import { signInPage } from './signin-page.js';
import { webUi } from './web-ui.js';

export function webRoutes(deps: Deps): Router {
  const web = express.Router();
  web.get('/signin', signInPage);
  web.use(webUi(deps));
  return web;
}
