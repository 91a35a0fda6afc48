"""The text recogniser's input (gpu_service.models.text_read): lines cut out of frames and scaled to
STRIP_HEIGHT pixels tall. Workers cut the strips and import this module, not the model's, which would load
torch into every worker process (about a second and 180 MiB each) for one number."""

#: the recogniser's input height (rapidocr's rec_img_shape)
STRIP_HEIGHT = 48
