"""One FastAPI router per feature; create_app includes them in this order."""
from service.routes import audits, certificates, health, keys, log, pages, reports, sigma, verify

ROUTERS = [pages.router, health.router, certificates.router, reports.router, keys.router, verify.router, sigma.router,
           audits.router, log.router]
