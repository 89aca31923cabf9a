/* impl_names.h: force-included (-include) into every C file of
 * libsuperopt_gpu.so: the executor's definitions of gpu.h's functions take
 * an _impl suffix there, so they never clash with the forwarders of
 * lazy.c, which dlsym them by that name. Keep in step with GPU_FORWARDED in
 * lazy.c (a missing name shows in `superopt --version`). */
#define gpu_device_count gpu_device_count_impl
#define gpu_ctx_new gpu_ctx_new_impl
#define gpu_ctx_free gpu_ctx_free_impl
#define gpu_ctx_describe gpu_ctx_describe_impl
#define gpu_lib_versions gpu_lib_versions_impl
#define gpu_plan_new gpu_plan_new_impl
#define gpu_plan_free gpu_plan_free_impl
#define gpu_plan_upload gpu_plan_upload_impl
#define gpu_plan_run gpu_plan_run_impl
#define gpu_plan_download gpu_plan_download_impl
#define gpu_plan_write gpu_plan_write_impl
#define gpu_plan_read gpu_plan_read_impl
#define gpu_plan_time gpu_plan_time_impl
#define gpu_plan_profile gpu_plan_profile_impl
#define gpu_plan_memory gpu_plan_memory_impl
#define gpu_plan_unplanned_bytes gpu_plan_unplanned_bytes_impl
#define gpu_plan_streams gpu_plan_streams_impl
#define gpu_plan_reorder gpu_plan_reorder_impl
#define gpu_plan_graph gpu_plan_graph_impl
#define gpu_plan_computed_by gpu_plan_computed_by_impl
#define gpu_plan_channels_last gpu_plan_channels_last_impl
#define gpu_plan_engine gpu_plan_engine_impl
#define gpu_measure_node gpu_measure_node_impl
#define gpu_measure_plan gpu_measure_plan_impl
#define gpu_kernel_stats gpu_kernel_stats_impl
#define gpu_dnn_plan_stats gpu_dnn_plan_stats_impl
#define gpu_tune_stats gpu_tune_stats_impl
#define gpu_fused_source gpu_fused_source_impl
#define gpu_fused_compile gpu_fused_compile_impl
#define gpu_attach_host gpu_attach_host_impl
