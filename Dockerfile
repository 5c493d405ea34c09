# The acpc-lbr project image: the dealer, the LBR agent and the reference bots.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY dealer ./dealer
COPY agents ./agents
COPY acpc_lbr ./acpc_lbr
# Every directory the container writes to, and every mount point of
# docker-compose.yml, is created here owned by acpc: a named volume mounted on
# a path the image lacks comes up owned by root, and the dealer (user acpc)
# could not write its logs there (tests/deploy/test_compose.py checks this).
RUN pip install --no-cache-dir . \
    && useradd --create-home acpc \
    && install -d -o acpc -g acpc /home/acpc/logs /home/acpc/.numba-cache
USER acpc
WORKDIR /home/acpc
# numba compiles on first use; its cache must be writable by acpc.
ENV NUMBA_CACHE_DIR=/home/acpc/.numba-cache
ENTRYPOINT ["acpc-lbr"]
CMD ["--help"]
