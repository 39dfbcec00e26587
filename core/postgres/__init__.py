"""PostgreSQL storage, for deployments where several bot processes share one database
(PIXELRAG_DATABASE_URL). Imported only when configured: psycopg is an optional dependency."""
