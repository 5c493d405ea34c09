# The acpc-lbr project image: the dealer, the LBR agent and the reference bots.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY dealer ./dealer
COPY agents ./agents
COPY acpc_lbr ./acpc_lbr
RUN pip install --no-cache-dir . \
    && useradd --create-home acpc
USER acpc
WORKDIR /home/acpc
# numba compiles on first use and caches beside the package; keep the cache writable.
ENV NUMBA_CACHE_DIR=/home/acpc/.numba-cache
ENTRYPOINT ["acpc-lbr"]
CMD ["--help"]
